"""The folder a dataset writer (`prepare`, `make-sample-chestxray`) fills, kept safe to reuse.

A writer claims its destination before writing anything: an empty or new folder, or, with
`overwrite`, one that a writer filled before. It records every file it is about to write in
`MANIFEST` first, so that `overwrite` deletes exactly those (even after an interrupted run) and
never a file mgbench did not write, and old and new output never mix. The label file is written
last and atomically: a folder with a label file is a complete one.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mgbench.common.errors import UsageError

MANIFEST = "mgbench-files.txt"


def write_atomically(path: Path, text: str) -> None:
    """Through a temporary file and a rename: an interrupted write leaves the old file or none,
    never half of one (half a label file would read as a smaller dataset). A write that fails
    (a full disk) removes its temporary file: left behind, it is a file no manifest lists, and
    the folder could then be neither reused nor overwritten."""
    partial = path.with_name(f".{path.name}.partial")
    try:
        partial.write_text(text)
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


@contextmanager
def writing_into(dst: Path) -> Iterator[None]:
    """Turn a failed write into `dst` (a full disk, a quota, a folder gone read-only) into one
    line: everything written so far is listed in its manifest, so `--overwrite` replaces it."""
    try:
        yield
    except OSError as error:
        raise UsageError(
            f"cannot write to {dst}: {error.strerror or error}; run again with --overwrite once that is "
            "fixed (it replaces what this run wrote)"
        ) from None


def listed_files(manifest: Path) -> set[str]:
    """The relative paths a manifest lists; an absolute or `..` path is ignored, so an edited
    manifest cannot make `overwrite` delete outside its folder."""
    lines = manifest.read_text().splitlines()
    return {line for line in lines if line and not Path(line).is_absolute() and ".." not in Path(line).parts}


def clear_earlier_output(dst: Path, planned: list[str], overwrite: bool) -> None:
    """Delete what a writer listed in the non-empty `dst`, or refuse: without `overwrite`,
    without a manifest, or when a planned file exists that mgbench did not write."""
    if not overwrite:
        raise UsageError(f"{dst} is not empty; choose a new folder, or --overwrite to replace what mgbench wrote there")
    manifest = dst / MANIFEST
    if not manifest.is_file():
        raise UsageError(f"{dst} was not written by mgbench (no {MANIFEST}); --overwrite replaces only mgbench's files")
    ours = listed_files(manifest)
    foreign = next((name for name in planned if name not in ours and (dst / name).exists()), None)
    if foreign is not None:
        raise UsageError(f"{dst / foreign} was not written by mgbench; move it away before overwriting {dst}")
    for name in ours:
        (dst / name).unlink(missing_ok=True)
    manifest.unlink()


def claim_folder(dst: Path, planned: list[str], overwrite: bool) -> None:
    """Make `dst` ready for the files `planned` (relative paths) and list them in its manifest."""
    if dst.exists() and not dst.is_dir():
        raise UsageError(f"{dst} is not a folder")
    try:
        if dst.is_dir() and any(dst.iterdir()):
            clear_earlier_output(dst, planned, overwrite)
        # The manifest before anything else: a folder that holds anything of ours holds the
        # list of it, so a rerun with --overwrite can clear it whatever failed after.
        dst.mkdir(parents=True, exist_ok=True)
        write_atomically(dst / MANIFEST, "".join(f"{name}\n" for name in planned))
        for folder in sorted({(dst / name).parent for name in planned}):
            folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UsageError(f"cannot write to {dst}: {error.strerror or error}") from None
