"""A run's watchdog: what a run started dies with the mgbench process that started it.

mgbench stops a run's process groups itself when the run times out or is interrupted, but a
SIGKILL (or a crash) gives it no chance to, and the launcher and its workers would run on
orphaned, writing into the run folder and holding the devices. So each run has a watchdog:
a small process in a session of its own (`python -m mgbench.runner.watchdog`), told over a
pipe the pid of each process the run launches. It follows those processes and every process
they start (torchrun starts its workers in sessions of their own, out of the launcher's
process group), and when the pipe closes without a `done`, mgbench is gone: the watchdog
stops every process of the run it knows (SIGSTOP, so that none starts another meanwhile),
then kills them all, and removes the run's temporary folder (`mgbench.runner.scratch`).
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import sys
import time
from collections import defaultdict
from types import TracebackType
from typing import IO

import psutil

from mgbench.runner.scratch import remove_scratch

MODULE = "mgbench.runner.watchdog"
DONE = "done"
POLL_SECONDS = 1.0
SETTLE_SECONDS = 0.05
"""How long a stopped process may take to finish a fork it was in (its child then shows)."""
EXIT_SECONDS = 10.0
_GONE = (psutil.NoSuchProcess, psutil.AccessDenied)


class RunTree:
    """The processes of one run: those launched for it and every descendant seen since."""

    def __init__(self) -> None:
        self.since = psutil.Process().create_time()
        self.known: dict[int, psutil.Process] = {}

    def add_launched(self, pid: int) -> None:
        """Follow `pid`: mgbench launched it after starting this watchdog, so a process older than
        the watchdog holds a reused pid (the launched one already ended) and is left alone."""
        with contextlib.suppress(*_GONE):
            process = psutil.Process(pid)
            if process.create_time() >= self.since:
                self.known[pid] = process

    def refresh(self) -> list[psutil.Process]:
        """Add the descendants of the processes known and still running; returns the ones new.

        One pass over the process table: a process whose parent is known joins the tree."""
        children: dict[int, list[psutil.Process]] = defaultdict(list)
        for process in psutil.process_iter(["ppid"]):
            children[process.info["ppid"]].append(process)
        frontier = [pid for pid, process in self.known.items() if process.is_running()]
        new = []
        while frontier:
            for child in children.get(frontier.pop(), ()):
                if child.pid not in self.known:
                    self.known[child.pid] = child
                    new.append(child)
                    frontier.append(child.pid)
        return new

    def kill(self) -> None:
        """Stop the whole tree, following it until no process in it has started another, then kill it."""
        self.refresh()
        stopping = list(self.known.values())
        while stopping:
            for process in stopping:
                with contextlib.suppress(*_GONE):
                    process.suspend()
            time.sleep(SETTLE_SECONDS)
            stopping = self.refresh()
        for process in self.known.values():
            with contextlib.suppress(*_GONE):
                process.kill()


def watch(commands: IO[bytes], tree: RunTree) -> bool:
    """Read launched pids from `commands` until `done` (the run ended under mgbench's control) or
    end of file (mgbench died: kill the run), following the tree between reads. Whether it
    killed the run."""
    pending = b""
    while True:
        readable, _, _ = select.select([commands], [], [], POLL_SECONDS)
        if not readable:
            tree.refresh()
            continue
        chunk = os.read(commands.fileno(), 4096)
        if not chunk:
            tree.kill()
            return True
        *lines, pending = (pending + chunk).split(b"\n")
        for line in lines:
            if line.decode() == DONE:
                return False
            tree.add_launched(int(line))
        tree.refresh()


class RunWatchdog:
    """mgbench's end of a run's watchdog: start it, `launched(pid)` for each process started,
    and leave the `with` block once the run's processes are ended (or stopped) to release it."""

    def __init__(self, env: dict[str, str], output: IO[str]):
        self.process = subprocess.Popen(
            [sys.executable, "-m", MODULE],
            stdin=subprocess.PIPE,
            stdout=output,
            stderr=output,
            env=env,
            start_new_session=True,
        )

    def _send(self, line: str) -> None:
        """A line to the watchdog; one that died (its error is in the run's log) is not waited on."""
        assert self.process.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            self.process.stdin.write(f"{line}\n".encode())
            self.process.stdin.flush()

    def launched(self, pid: int) -> None:
        self._send(str(pid))

    def __enter__(self) -> RunWatchdog:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self._send(DONE)
        assert self.process.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            self.process.stdin.close()
        try:
            self.process.wait(EXIT_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def main() -> int:
    if watch(sys.stdin.buffer, RunTree()):
        # mgbench is gone and cannot remove the run's temporary folder itself.
        remove_scratch(os.environ)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
