"""Finding and decoding image files: shared by every loader, `prepare` and the dataset checks."""

from __future__ import annotations

import os
from pathlib import Path

from PIL import Image, UnidentifiedImageError

from mgbench.common.errors import UsageError

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")


def index_images(root: Path) -> dict[str, Path]:
    """Every image under `root` (recursively) by file stem.

    Matching on the stem lets a label file that names `x.png` find `x.jpg` after
    `prepare --format jpeg`, and finds NIH images wherever the archive put them
    (`images/`, `images_001/images/`, ...).
    """
    found: dict[str, Path] = {}
    for folder, _, names in os.walk(root):
        for name in names:
            stem, suffix = os.path.splitext(name)
            if suffix.lower() in IMAGE_SUFFIXES:
                found.setdefault(stem, Path(folder) / name)
    return found


def resolve_files(names: list[str], index: dict[str, Path], listed_in: Path) -> list[str]:
    """Paths for the names a label file lists; one error naming the absent ones."""
    stems = [os.path.splitext(name)[0] for name in names]
    absent = [name for name, stem in zip(names, stems) if stem not in index]
    if absent:
        shown = ", ".join(absent[:5]) + (f" and {len(absent) - 5} more" if len(absent) > 5 else "")
        raise UsageError(f"{listed_in} lists {len(absent)} image(s) that are not in its folder: {shown}")
    return [str(index[stem]) for stem in stems]


GRAYSCALE_MODES = ("1", "L", "LA", "I", "I;16", "I;16B", "F")


def open_image(path: str | Path) -> Image.Image:
    """Decode as 8-bit grayscale (X-rays stay one channel until normalised) or RGB.

    An unreadable or truncated file is a UsageError naming it.
    """
    try:
        with Image.open(path) as image:
            image.load()
            return image.convert("L" if image.mode in GRAYSCALE_MODES else "RGB")
    except (OSError, UnidentifiedImageError, ValueError) as error:
        raise UsageError(f"cannot decode image {path}: {error}") from None
