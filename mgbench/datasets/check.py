"""Every image file of a dataset checked once, in parallel, before anything trains on it.

A file that cannot be decoded fails a run when a loader first reaches it, minutes into
training, naming that one file. The check reads every file first, so that all bad files are
named together (or left out, with `--skip-bad-images`). It reads what decoding needs: a PNG is
verified (its header, then every chunk against its CRC, which finds truncated files and damaged
bytes) at about a tenth of the cost of decoding it (docs/real-data.md gives the figures); a JPEG is decoded,
as it has no checksums and PIL's verify reads nothing of it.

Only regular files are read (`safe_files.open_regular`): a FIFO, socket or device named like an
image is a bad file, named with what it is, and never opened (a FIFO would hold the check, and
Ctrl-C, until someone wrote to it). Each file gets FILE_SECONDS; one that takes longer (a stalled
network mount) is a bad file too, so no single file holds the whole check.

The check also reads the dataset's range for images wider than 8 bits: the largest value of up to
RANGE_SAMPLE of them, spread over the list, gives the bit depth every such image is scaled by
(`images.rescaled`). A detector's images reach its top bits in nearly every image (bone, markers),
and the depth is a power of two, so a sample finds what reading them all would.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
from PIL import Image, UnidentifiedImageError

from mgbench.core.safe_files import NotRegularFileError, open_regular
from mgbench.datasets.encoded import device_readable, jpeg_named
from mgbench.datasets.images import WIDE_MODES, Header, range_bits
from mgbench.datasets.parallel import ProgressCallback, map_with_progress

RANGE_SAMPLE = 64
"""Wide images decoded to read the dataset's range."""
FILE_SECONDS = 60.0
"""How long reading one file may take before it is named as bad: far above what decoding the
largest image PIL accepts takes, so only a file that does not come (a stalled mount) reaches it."""


@dataclass(frozen=True)
class FilesCheck:
    bad: dict[str, str]
    """Each file that cannot be decoded, with why, in the order given."""
    bit_depth: int | None
    """The range of the wide images (`images.range_bits` of their largest value); None: none is wide."""
    reencoded: tuple[str, ...] = ()
    """The files `--decode gpu`'s loaders hand over re-encoded (`FileCheck.reencoded`)."""

    def listing(self, root: Path, limit: int | None = None) -> str:
        """The bad files, relative to `root`, each with why; past `limit` of them, how many more."""
        shown = list(self.bad.items())[:limit]
        listed = "; ".join(f"{os.path.relpath(path, root)} ({why})" for path, why in shown)
        more = len(self.bad) - len(shown)
        return listed + (f" and {more} more" if more else "")


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """TimeoutError in the block once `seconds` have passed (SIGALRM: a read blocked in the
    kernel is interrupted too). Main thread only, as a pool worker runs its jobs."""

    def expire(signum: int, frame: object) -> None:
        raise TimeoutError(f"not read within {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextmanager
def opened(path: str) -> Iterator[Image.Image]:
    """The image of a regular file, read within FILE_SECONDS (NotRegularFileError, TimeoutError)."""
    with time_limit(FILE_SECONDS), open(path, "rb", opener=open_regular) as handle, Image.open(handle) as image:
        yield image


class FileCheck(NamedTuple):
    reason: str | None
    """Why the file cannot be decoded; None: it can."""
    wide: bool
    """Whether its pixels are wider than 8 bits."""
    reencoded: bool
    """Whether `--decode gpu`'s loaders hand it over re-encoded: an image under a JPEG name that
    a device decoder does not read as it is (`encoded.device_readable`)."""


def check_file(path: str) -> FileCheck:
    """Whether `path` can be decoded, and what else decoding it will meet."""
    try:
        with opened(path) as image:
            wide = image.mode in WIDE_MODES
            reencoded = jpeg_named(path) and not device_readable(Header.of(image))
            if image.format == "PNG":
                image.verify()
            else:
                image.load()
        return FileCheck(None, wide, reencoded)
    except UnidentifiedImageError:
        return FileCheck("not an image PIL can read", False, False)
    except NotRegularFileError as error:
        return FileCheck(error.strerror, False, False)
    # Whatever PIL raises on a file (OSError, SyntaxError for a bad checksum, struct.error for a
    # cut chunk, DecompressionBombError) is what the loader would raise on it.
    except Exception as error:
        return FileCheck(f"{type(error).__name__}: {error}", False, False)


def largest_value(path: str) -> float:
    """The largest pixel value of an image (a full decode)."""
    with opened(path) as image:
        return float(np.asarray(image).max())


def check_files(
    files: list[str], workers: int | None = None, on_progress: ProgressCallback = lambda done, total: None
) -> FilesCheck:
    """Check every file in worker processes (`check_file`), then read the wide images' range."""
    results = map_with_progress(check_file, [(path,) for path in files], workers, on_progress)
    bad = {path: found.reason for path, found in zip(files, results) if found.reason is not None}
    wide = [path for path, found in zip(files, results) if found.wide]
    sample = wide[:: max(1, len(wide) // RANGE_SAMPLE)][:RANGE_SAMPLE]
    maxima = map_with_progress(largest_value, [(path,) for path in sample], workers) if sample else []
    reencoded = tuple(path for path, found in zip(files, results) if found.reencoded)
    return FilesCheck(bad, range_bits(max(maxima)) if maxima else None, reencoded)
