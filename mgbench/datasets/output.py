"""The folder a dataset writer (`prepare`, `make-sample-chestxray`) fills, kept safe to reuse.

A writer claims its destination before writing anything: an empty or new folder, or, with
`overwrite`, one that a writer filled before. It records every file it is about to write in
`MANIFEST` first, so that `overwrite` deletes exactly those (even after an interrupted run) and
never a file mgbench did not write, and old and new output never mix. The label file is written
last: a folder with a label file is a complete one.

The destination may have been handed over, copied or tampered with, so nothing in it is
followed: `overwrite` deletes only listed names that are regular files, reached without a link
on the way (a link in the destination to the source would otherwise delete the originals), and
every file goes through `safe_files.write_file`, which replaces a link at its name instead of
writing through it.
"""

from __future__ import annotations

import errno
import os
import stat
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePath
from typing import Any

from PIL import Image

from mgbench.core.errors import UsageError
from mgbench.core.safe_files import LinkRefusedError, ensure_folder, fresh_stream, open_folder, write_file

MANIFEST = "mgbench-files.txt"
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
"""A manifest is read without following a link, and without waiting on a FIFO put in its place."""


def save_image(dst: Path, relative: str, image: Image.Image, **options: Any) -> None:
    """Save `image` as `dst/relative`, in the format its suffix names, through `fresh_stream`:
    handed a path, Pillow would follow a link planted there. Not through a temporary file: a
    worker terminated mid-image (Ctrl-C) leaves the listed name, which `overwrite` removes, where
    a temporary file would be left behind, listed nowhere."""
    with fresh_stream(dst, relative, "wb") as handle:
        image.save(handle, format=Image.registered_extensions()[PurePath(relative).suffix], **options)


def link_refused(error: LinkRefusedError, dst: Path) -> UsageError:
    """The one line for a link (or what is no folder) on the way to a file of `dst`, naming it."""
    return UsageError(f"{error.filename} is a link or not a folder; mgbench follows no link inside {dst}")


@contextmanager
def writing_into(dst: Path) -> Iterator[None]:
    """Turn a failed write into `dst` (a full disk, a quota, a folder gone read-only) into one
    line: everything written so far is listed in its manifest, so `--overwrite` replaces it. A
    link planted on the way meanwhile is named instead (`--overwrite` would not fix it)."""
    try:
        yield
    except LinkRefusedError as error:
        raise link_refused(error, dst) from None
    except OSError as error:
        raise UsageError(
            f"cannot write to {dst}: {error.strerror or error}; run again with --overwrite once that is "
            "fixed (it replaces what this run wrote)"
        ) from None


def not_ours(path: str | Path, kind: str) -> UsageError:
    return UsageError(
        f"{path} is a link or not a {kind}; --overwrite follows no link and deletes only the files mgbench "
        "wrote, so nothing was deleted"
    )


def listed_files(dst: Path) -> set[str]:
    """The relative paths `dst`'s manifest lists. An absolute or `..` path is ignored, so an edited
    manifest cannot make `overwrite` delete outside its folder; a manifest that is a link (to a
    list of anything) or no regular file is refused."""
    manifest = dst / MANIFEST
    try:
        fd = os.open(manifest, READ_FLAGS)
    except FileNotFoundError:
        raise UsageError(
            f"{dst} was not written by mgbench (no {MANIFEST}); --overwrite replaces only mgbench's files"
        ) from None
    except OSError as error:
        if error.errno != errno.ELOOP:
            raise
        raise not_ours(manifest, "regular file") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise not_ours(manifest, "regular file")
    with os.fdopen(fd) as handle:
        lines = handle.read().splitlines()
    return {line for line in lines if line and not Path(line).is_absolute() and ".." not in Path(line).parts}


def must_be_regular(folder: int, name: str, path: Path) -> None:
    """`delete_listed`'s first step: refuse `name` in `folder` unless it is a regular file or gone."""
    try:
        mode = os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        raise not_ours(path, "regular file")


def remove(folder: int, name: str, path: Path) -> None:
    """`delete_listed`'s second step (same signature as the first, `path` unused): `name` unlinked
    from `folder`, which never removes a link's target."""
    try:
        os.unlink(name, dir_fd=folder)
    except FileNotFoundError:
        pass


def delete_listed(dst: Path, listed: set[str]) -> None:
    """Delete the listed files of `dst`, each reached through folders opened without following
    a link. Every one is checked before any is deleted: a linked folder on the way, or a name
    that is a link, a folder or a FIFO, refuses the whole overwrite with nothing deleted."""
    by_folder: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for name in sorted(listed):
        *folders, leaf = PurePath(name).parts
        by_folder[tuple(folders)].append(leaf)
    for step in (must_be_regular, remove):
        for parents, names in by_folder.items():
            try:
                folder = open_folder(dst, list(parents), create=False)
            except FileNotFoundError:
                continue
            except LinkRefusedError as error:
                raise not_ours(error.filename, "folder") from None
            try:
                for name in names:
                    step(folder, name, dst.joinpath(*parents, name))
            finally:
                os.close(folder)


def check_claimable(dst: Path, overwrite: bool) -> bool:
    """What `claim_folder` refuses before reading a manifest: `dst` that is no folder, or a used
    folder without `overwrite`. Checked first by a writer whose work before writing is long (a
    download, a tokeniser), so that it is refused at once; nothing is written or deleted. Returns
    whether `dst` holds anything (to be cleared under `overwrite`)."""
    if dst.exists() and not dst.is_dir():
        raise UsageError(f"{dst} is not a folder")
    try:
        used = dst.is_dir() and any(dst.iterdir())
    except OSError as error:
        raise UsageError(f"cannot write to {dst}: {error.strerror or error}") from None
    if used and not overwrite:
        raise UsageError(f"{dst} is not empty; choose a new folder, or --overwrite to replace what mgbench wrote there")
    return used


def clear_earlier_output(dst: Path, planned: list[str]) -> None:
    """Delete what a writer listed in the non-empty `dst`, or refuse: without a manifest, or when
    a planned file exists that mgbench did not write."""
    ours = listed_files(dst)
    foreign = next((name for name in planned if name not in ours and (dst / name).exists()), None)
    if foreign is not None:
        raise UsageError(f"{dst / foreign} was not written by mgbench; move it away before overwriting {dst}")
    delete_listed(dst, ours)
    (dst / MANIFEST).unlink()


def claim_folder(dst: Path, planned: list[str], overwrite: bool) -> None:
    """Make `dst` ready for the files `planned` (relative paths) and list them in its manifest."""
    used = check_claimable(dst, overwrite)
    try:
        if used:
            clear_earlier_output(dst, planned)
        # The manifest before anything else: a folder that holds anything of ours holds the
        # list of it, so a rerun with --overwrite can clear it whatever failed after.
        dst.mkdir(parents=True, exist_ok=True)
        write_file(dst, MANIFEST, "".join(f"{name}\n" for name in planned))
        for folder in sorted({PurePath(name).parent for name in planned} - {PurePath()}):
            ensure_folder(dst, folder)
    except LinkRefusedError as error:
        raise link_refused(error, dst) from None
    except OSError as error:
        raise UsageError(f"cannot write to {dst}: {error.strerror or error}") from None
