"""Writing a file inside a folder mgbench did not just create, without following links.

A run folder or a dataset destination may be shared, copied or prepared by someone else, so any
name in it can be a symbolic link (to a file or a folder elsewhere), a hard link to an outside
file, or a FIFO. Every write goes through here:

* the path is walked from the folder one component at a time with `O_NOFOLLOW | O_DIRECTORY`
  (`openat`), so no folder on the way is a link and the file lands inside the folder, whatever
  is swapped in meanwhile;
* a whole file (`write_file`) is written to a new temporary name beside it (`O_EXCL`) and renamed
  over the old name: a link or a hard link in its place is replaced, never written through, and
  a full disk leaves the old file whole instead of a truncated one;
* a file written as it goes (`fresh_stream`, a run's log) first removes the old name (a link
  goes, its target stays) and is created anew with `O_EXCL | O_NOFOLLOW`; a writer that opens
  the path itself (a profiler) is handed a name `clear_name` removed first;
* a file the user names that must not replace anything (`convert-weights`' DST, `run
  --save-state`) is checked free and writable before the work that ends in it
  (`check_new_name`), and is written whole beside its name, then linked to it (`write_file`'s
  `exclusive`, `new_file_by_writer`): a name taken meanwhile fails the link, never the taker.

Reading or locking such a name goes through `open_regular` (`read_regular` for a whole file):
only a regular file is opened, as a FIFO holds `open` (or the first read) until someone writes to
it, and a device may never end.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePath
from typing import IO

NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class LinkRefusedError(OSError):
    """A component of a path inside the folder is a link or not a folder: nothing was written."""


FILE_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a device",
    stat.S_IFBLK: "a device",
    stat.S_IFDIR: "a folder",
    stat.S_IFLNK: "a link",
}


class NotRegularFileError(OSError):
    """A name that must hold a regular file holds something else (its `strerror` says what):
    nothing was opened, read or written."""

    def __init__(self, path: str | os.PathLike, mode: int):
        kind = FILE_KINDS.get(stat.S_IFMT(mode), "not a file")
        super().__init__(errno.EINVAL, f"{kind}, not a regular file", os.fspath(path))


def _components(relative: str | PurePath) -> list[str]:
    parts = PurePath(relative).parts
    if not parts or PurePath(relative).is_absolute() or any(part in ("..", ".") for part in parts):
        raise ValueError(f"{relative!s} is not a plain path inside a folder")
    return list(parts)


def open_folder(root: Path, parts: list[str], create: bool = True) -> int:
    """A descriptor of `root/parts...`, each component opened without following a link (made
    when missing and `create`). Raises LinkRefusedError naming the component that is a link or
    no folder."""
    fd = os.open(root, DIR_FLAGS & ~os.O_NOFOLLOW)
    try:
        for index, part in enumerate(parts):
            if create:
                try:
                    os.mkdir(part, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass
            try:
                child = os.open(part, DIR_FLAGS, dir_fd=fd)
            except OSError as error:
                if error.errno in (errno.ELOOP, errno.ENOTDIR):
                    where = root.joinpath(*parts[: index + 1])
                    raise LinkRefusedError(
                        error.errno, "a link or not a folder; nothing was written", str(where)
                    ) from None
                raise
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_file(root: Path, relative: str | PurePath, data: str | bytes, exclusive: bool = False) -> Path:
    """Write `root/relative` whole: a new file renamed over the old name (which may be a link or
    a hard link: the entry is replaced, its target untouched), or, `exclusive`, linked to the name
    only where nothing holds it (else FileExistsError, and nothing is replaced). An OSError names
    the file, but a LinkRefusedError, kept as it is, names the link on the way: what the user has
    to remove. The new file's mode is 0666 less the umask, as `open` makes files. Text is written
    as UTF-8, a name that is not (a file name's byte held as a surrogate) as its own bytes. Returns
    the path."""
    *folders, name = _components(relative)
    path = root.joinpath(relative)
    payload = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
    try:
        folder = open_folder(root, folders)
    except LinkRefusedError:
        raise
    except OSError as error:
        raise OSError(error.errno, error.strerror, error.filename or str(path)) from None
    temporary = f".{name}.{secrets.token_hex(6)}.partial"
    try:
        fd = os.open(temporary, NEW_FILE_FLAGS, 0o666, dir_fd=folder)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(payload)
                handle.flush()
                os.fsync(handle.fileno())
            _publish(folder, temporary, name, exclusive)
        except BaseException as error:
            try:
                os.unlink(temporary, dir_fd=folder)
            except FileNotFoundError:
                pass
            if isinstance(error, OSError):
                raise OSError(error.errno, error.strerror, str(path)) from None
            raise
    finally:
        os.close(folder)
    return path


def _publish(folder: int, temporary: str, name: str, exclusive: bool) -> None:
    """The whole `temporary` file of `folder` at `name`: renamed over it, or (`exclusive`) linked
    there, which fails with FileExistsError where anything holds the name, and then removed."""
    if not exclusive:
        os.rename(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)
        return
    os.link(temporary, name, src_dir_fd=folder, dst_dir_fd=folder, follow_symlinks=False)
    os.unlink(temporary, dir_fd=folder)


def check_new_name(path: Path) -> None:
    """Raise FileExistsError where anything holds `path` (a file, a link, a FIFO: nothing is
    written over or through it), else an OSError where no file can be made in its folder (missing,
    not a folder, read-only, a file system such as /proc that makes none): a file made there and
    removed says so, before the work whose end is writing `path`."""
    if os.path.lexists(path):
        raise FileExistsError(errno.EEXIST, "exists", str(path))
    folder = open_folder(path.parent, [], create=False)
    try:
        probe = f".{path.name}.{secrets.token_hex(6)}.probe"
        os.close(os.open(probe, NEW_FILE_FLAGS, 0o666, dir_fd=folder))
        os.unlink(probe, dir_fd=folder)
    finally:
        os.close(folder)


@contextmanager
def new_file_by_writer(path: Path) -> Iterator[Path]:
    """A path for a writer that opens its own file (numpy's `savez`) to make the new file `path`:
    a temporary name beside it (ending as `path` does, a suffix such a writer would add), linked
    to `path` once the writer is done, which fails with FileExistsError where a file has taken
    the name meanwhile: nothing is replaced. The temporary name is gone after, whatever happened."""
    folder = open_folder(path.parent, [], create=False)
    temporary = f".{path.stem}.{secrets.token_hex(6)}.partial{path.suffix}"
    try:
        yield path.parent / temporary
        _publish(folder, temporary, path.name, exclusive=True)
    finally:
        try:
            os.unlink(temporary, dir_fd=folder)
        except FileNotFoundError:
            pass
        os.close(folder)


@contextmanager
def fresh_stream(root: Path, relative: str | PurePath, mode: str = "w", newline: str | None = None) -> Iterator[IO]:
    """`root/relative` opened for writing as it goes (a log read while it grows): whatever held
    the name is removed first (a link goes, its target stays) and the file is created anew,
    without following a link. `mode` is "w" or "wb"; `newline` as `open` takes it; text goes as
    `write_file` writes it, a file name's bytes that are not UTF-8 as they are."""
    *folders, name = _components(relative)
    folder = open_folder(root, folders)
    try:
        _unlink(folder, name, root / relative)
        fd = os.open(name, NEW_FILE_FLAGS, 0o666, dir_fd=folder)
    finally:
        os.close(folder)
    errors = None if "b" in mode else "surrogateescape"
    with os.fdopen(fd, mode, newline=newline, errors=errors) as handle:
        yield handle


def _unlink(folder: int, name: str, path: Path) -> None:
    try:
        os.unlink(name, dir_fd=folder)
    except FileNotFoundError:
        pass
    except IsADirectoryError:
        raise IsADirectoryError(errno.EISDIR, "a folder is in the way; nothing was written", str(path)) from None


def clear_name(root: Path, relative: str | PurePath) -> Path:
    """`root/relative` made free for a writer that opens the path itself and would follow a link
    or write through a hard link there (a profiler's trace): whatever held the name is removed
    (a link goes, its target stays). Returns the path."""
    *folders, name = _components(relative)
    folder = open_folder(root, folders)
    try:
        _unlink(folder, name, root / relative)
    finally:
        os.close(folder)
    return root.joinpath(relative)


def ensure_folder(root: Path, relative: str | PurePath) -> Path:
    """`root/relative` made (with its parents) and checked to be folders all the way, no link on
    the way: a writer (a profiler, a chart library) that takes a path can then be handed it."""
    os.close(open_folder(root, _components(relative)))
    return root.joinpath(relative)


def open_regular(path: str | os.PathLike, flags: int = os.O_RDONLY, follow_links: bool = True) -> int:
    """A descriptor of `path` (opened with `flags`; with O_CREAT a missing file is made, mode 0666
    less the umask), or NotRegularFileError when it holds anything but a regular file, or a link
    where `follow_links` is off. The name is looked at first, so a FIFO, socket or device is never
    opened; the open itself cannot block (O_NONBLOCK, which changes nothing for a regular file)
    and what it opened is checked again, for a name swapped in between. Has the signature of
    `open`'s `opener`."""
    try:
        _refuse_unless_regular(path, os.stat(path, follow_symlinks=follow_links).st_mode)
    except FileNotFoundError:
        if not flags & os.O_CREAT:
            raise
    nofollow = 0 if follow_links else os.O_NOFOLLOW
    fd = os.open(path, flags | os.O_NONBLOCK | os.O_CLOEXEC | nofollow, 0o666)
    try:
        _refuse_unless_regular(path, os.fstat(fd).st_mode)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: str | os.PathLike) -> bytes:
    """The whole of `path`, read only if it is a regular file (`open_regular`): a FIFO, a socket,
    a device or a folder is a NotRegularFileError, never waited on."""
    with open(path, "rb", opener=open_regular) as handle:
        return handle.read()


def _refuse_unless_regular(path: str | os.PathLike, mode: int) -> None:
    if not stat.S_ISREG(mode):
        raise NotRegularFileError(path, mode)
