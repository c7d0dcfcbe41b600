"""argparse types for option values that are wrong whatever else is given, refused as the line is
parsed (`OneLineParser`'s one line, exit code 2): before a folder is made, a plan recorded or a run
started, where such a value would otherwise time every run out at once, reach a launcher, or end
in an OSError's traceback."""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path

from mgbench.core.errors import UsageError
from mgbench.core.job import seed_refusal
from mgbench.core.safe_files import check_new_name
from mgbench.runner.hosts import parse_hosts

NAME_MAX = 255
"""The longest name of one file or folder, in bytes, that Linux file systems store (ext4, xfs,
btrfs, tmpfs all use 255); a longer one fails every write into it."""


def names(text: str) -> list[str]:
    """argparse type for `--frameworks` and `--strategies`: the names of a comma-separated list,
    each once: `--strategies ddp,ddp` is one `ddp` run per device count, not the same run twice
    (two rows of one run_id, a speed-up of a run against itself)."""
    return list(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))


def positive_seconds(text: str) -> float:
    """argparse type for `--timeout`: a finite number of seconds above zero."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"takes seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"takes a positive number of seconds, got {text!r}")
    return value


def rounds_count(text: str) -> int:
    """argparse type for `--repeat`: a whole number of rounds, 1 or more."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"takes a number of rounds, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"takes 1 round or more, got {text!r}")
    return value


def seed(text: str) -> int:
    """argparse type for a `--seed` that is not a job's (`convert-weights`, `make-sample-chestxray`;
    a job's is checked with the job, `job.settle`): an integer numpy's generators take as every
    framework's does, 0 to 2**32 - 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"takes an integer, got {text!r}") from None
    if refusal := seed_refusal(value):
        raise argparse.ArgumentTypeError(refusal)
    return value


def folder_path(text: str) -> Path:
    """argparse type for `--out`: a path whose every name fits a file system (`NAME_MAX`)."""
    path = Path(text)
    for name in path.parts:
        size = len(os.fsencode(name))
        if size > NAME_MAX:
            raise argparse.ArgumentTypeError(
                f"{name[:24]}... is {size} bytes long; a file system takes names of at most {NAME_MAX}"
            )
    return path


def hosts_text(text: str) -> str:
    """argparse type for `--hosts`: `slurm` (read when the compare starts), or `host:slots` pairs,
    checked now (`parse_hosts`); an empty value is refused, not taken as no hosts. The text is
    what compare records and `--resume` reads again."""
    if text != "slurm":
        try:
            parse_hosts(text)
        except UsageError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
    return text


WEIGHTS_SUFFIX = ".npz"


def new_weights_file(text: str) -> Path:
    """argparse type for a `.npz` of weights mgbench is to write (`convert-weights`' DST, `run
    --save-state`): named `.npz` (what `--init` reads; numpy would add the suffix to another
    name), free (nothing there is overwritten, nor a link written through, nor a FIFO waited on),
    and in a folder where a file can be made, checked before the work whose end is writing it."""
    path = Path(text)
    if path.suffix != WEIGHTS_SUFFIX:
        raise argparse.ArgumentTypeError(f"{text}: the weights are written as {WEIGHTS_SUFFIX} (what --init reads)")
    try:
        check_new_name(path.absolute())
    except FileExistsError:
        raise argparse.ArgumentTypeError(f"{text} exists: give a new name (it is not overwritten)") from None
    except OSError as error:
        raise argparse.ArgumentTypeError(f"{text}: no file can be made there ({error.strerror})") from None
    return path
