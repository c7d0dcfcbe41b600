"""One writer per run folder: a verb that writes one (compare, run, report, project) holds a lock
file in it for as long as it writes.

The lock is the OS's (`fcntl.flock` on the file), so it ends with its holder however the holder
ends, SIGKILL included: a crashed compare never leaves a false lock. The file names its holder
(pid, host, start) for the line a second writer is refused with; a file whose holder is gone
is taken over (`FolderLock.taken_over` says whose it was). Where the file system keeps no
locks (Lustre mounted without `flock`: ENOSYS), the recorded holder decides: one alive on this
host, or one on another host, holds the folder.

The name is only ever opened as a regular file, not through a link (`safe_files.open_regular`):
a FIFO there would hold the open forever, a link would create or lock a file outside the folder,
so anything else at the name is refused with one line.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import TracebackType

import psutil

from mgbench.core.errors import UsageError
from mgbench.core.safe_files import NotRegularFileError, open_regular

NO_LOCKS = (errno.ENOLCK, errno.ENOSYS, errno.EOPNOTSUPP)
"""What `flock` fails with on a file system that keeps no locks."""


@dataclass(frozen=True)
class Holder:
    """Who holds (or held) a folder's lock, as its lock file says."""

    pid: int
    host: str
    since: str

    def __str__(self) -> str:
        return f"pid {self.pid} on {self.host}, since {self.since}"

    @property
    def alive(self) -> bool:
        """Still running, as far as this host can tell (a holder on another host may be)."""
        return self.host != socket.gethostname() or psutil.pid_exists(self.pid)

    @classmethod
    def parse(cls, text: str) -> Holder | None:
        """The holder a lock file names; None for an empty or foreign one."""
        try:
            record = json.loads(text)
            return cls(int(record["pid"]), str(record["host"]), str(record["since"]))
        except (json.JSONDecodeError, TypeError, KeyError, ValueError):
            return None


class FolderLock:
    """Context manager: holds `path` from `__enter__` (raising UsageError when another process
    holds it) to `__exit__`, which removes the file. `taken_over` is the holder of a lock file
    left by a process that is gone (None when the folder was free)."""

    def __init__(self, path: Path):
        self.path = path
        self.fd: int | None = None
        self.taken_over: Holder | None = None

    def __enter__(self) -> FolderLock:
        while self.fd is None:
            fd = self._open(os.O_RDWR | os.O_CREAT)
            try:
                self._lock(fd)
                # The holder before us may have removed the file between our open and our lock.
                if self._names(fd):
                    self.fd = fd
            finally:
                if self.fd is None:
                    os.close(fd)
        self.taken_over = Holder.parse(_read(self.fd))
        own = Holder(os.getpid(), socket.gethostname(), datetime.now().isoformat(timespec="seconds"))
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, json.dumps(own.__dict__).encode(), 0)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self.fd is not None
        try:
            if self._names(self.fd):
                self.path.unlink()
        finally:
            os.close(self.fd)
            self.fd = None

    def refuse_if_held(self) -> None:
        """UsageError naming the holder when another process holds the lock; takes nothing (a
        folder checked before it is claimed is refused for being in use, not for its files)."""
        try:
            fd = self._open(os.O_RDONLY)
        except FileNotFoundError:
            return
        try:
            self._lock(fd)
        finally:
            os.close(fd)

    def _open(self, flags: int) -> int:
        try:
            return open_regular(self.path, flags, follow_links=False)
        except NotRegularFileError as error:
            raise UsageError(
                f"{self.path} is {error.strerror}: mgbench keeps its lock file there; remove it to use the folder"
            ) from None

    def _names(self, fd: int) -> bool:
        """Whether the lock file's path still names the file `fd` has open."""
        try:
            return os.path.samestat(os.stat(self.path), os.fstat(fd))
        except FileNotFoundError:
            return False

    def _lock(self, fd: int) -> None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            holder = Holder.parse(_read(fd))
        except OSError as error:
            if error.errno not in NO_LOCKS:
                raise
            holder = Holder.parse(_read(fd))
            if holder is None or not holder.alive:
                return
        held_by = holder or "holder unknown"
        raise UsageError(f"run folder {self.path.parent} is in use by another mgbench ({held_by}); wait for it to end")


def _read(fd: int) -> str:
    return os.pread(fd, 4096, 0).decode(errors="replace")
