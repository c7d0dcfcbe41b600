"""Finding and decoding image files: shared by every loader, `prepare` and the dataset checks."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
from PIL import Image, UnidentifiedImageError

from mgbench.core.errors import UsageError
from mgbench.datasets.pillow_build import pillow_build

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")


def index_images(root: Path) -> dict[str, list[Path]]:
    """Every image under `root` (recursively) by file stem, each stem with all its files.

    Matching on the stem lets a label file that names `x.png` find `x.jpg` after
    `prepare --format jpeg`, and finds NIH images wherever the archive put them
    (`images/`, `images_001/images/`, ...). A stem keeps every file it matches, so that
    `resolve_files` can refuse to guess between two folders' `x.png` instead of taking
    whichever the directory order gives first.
    """
    found: dict[str, list[Path]] = {}
    for folder, _, names in os.walk(root):
        for name in names:
            stem, suffix = os.path.splitext(name)
            if suffix.lower() in IMAGE_SUFFIXES:
                found.setdefault(stem, []).append(Path(folder) / name)
    return found


def resolve_files(names: list[str], index: dict[str, list[Path]], listed_in: Path) -> list[str]:
    """Paths for the names a label file lists: the file of that name, else the one of its stem;
    one error naming the absent ones, and one naming a name that matches several files."""
    stems = [os.path.splitext(name)[0] for name in names]
    absent = [name for name, stem in zip(names, stems) if stem not in index]
    if absent:
        shown = ", ".join(absent[:5]) + (f" and {len(absent) - 5} more" if len(absent) > 5 else "")
        raise UsageError(f"{listed_in} lists {len(absent)} image(s) that are not in its folder: {shown}")
    matches = [[p for p in index[stem] if p.name == name] or index[stem] for name, stem in zip(names, stems)]
    ambiguous = [(name, found) for name, found in zip(names, matches) if len(found) > 1]
    if ambiguous:
        name, found = ambiguous[0]
        raise UsageError(
            f"{listed_in} lists {len(ambiguous)} image(s) that match several files, such as {name} "
            f"({', '.join(sorted(str(p) for p in found))}); keep one file per name"
        )
    return [str(found[0]) for found in matches]


GRAYSCALE_MODES = ("1", "L", "LA", "La")
WIDE_MODES = ("I", "I;16", "I;16B", "I;16L", "I;16N", "F")
"""Pixels wider than 8 bits: 16-bit PNGs, where 12-bit detectors store 0-4095."""
DECLARED_BITS = 16
"""The bit depth a wide PNG declares: its scale where the dataset's own range was not read."""
RESCALED = "16-bit rescaled"
FLATTENED = "alpha flattened"


def decode(
    path: str | Path | BinaryIO, grayscale: bool = False, bit_depth: int | None = None
) -> tuple[Image.Image, str | None]:
    """8-bit grayscale (X-rays stay one channel until normalised), or RGB for colour images
    unless `grayscale`; and the conversion that changed the pixels beyond that (RESCALED,
    FLATTENED) or None, so `prepare` can count them. Wide pixels are scaled by the dataset's
    `bit_depth` (see `rescaled`).

    An unreadable or truncated file is a UsageError naming it.
    """
    try:
        with Image.open(path) as image:
            image.load()
            if image.mode in WIDE_MODES:
                return rescaled(image, bit_depth or DECLARED_BITS), RESCALED
            mode = "L" if grayscale or image.mode in GRAYSCALE_MODES else "RGB"
            if "A" in image.getbands() or "transparency" in image.info:
                return flattened(image).convert(mode), FLATTENED
            return (image if image.mode == mode else image.convert(mode)), None
    except (OSError, UnidentifiedImageError, ValueError) as error:
        raise UsageError(f"cannot decode image {path}: {error}") from None


def host_decoder() -> str:
    """What decodes images in the loaders' workers, as rows of real data record it: the Pillow
    build (`pillow 13.0.0`, `pillow-simd 12.1.1.post0`) on the host."""
    return f"{pillow_build()} (host)"


@dataclass(frozen=True)
class Header:
    """What an image file's header says, read without decoding its pixels."""

    size: tuple[int, int]
    """(width, height): what the host needs to draw an image's crop when the training device
    decodes it (`--decode gpu`)."""
    format: str | None
    """The format PIL read, whatever the file's name says (`JPEG`, `PNG`)."""
    mode: str
    """PIL's pixel mode (`RGB`, `L`, `CMYK`)."""

    @classmethod
    def of(cls, image: Image.Image) -> Header:
        """The header of an image PIL has opened."""
        return cls(image.size, image.format, image.mode)


def read_header(path: str | Path) -> Header:
    """The file's `Header`; an unreadable one is a UsageError naming it."""
    try:
        with Image.open(path) as image:
            return Header.of(image)
    except (OSError, UnidentifiedImageError, ValueError) as error:
        raise UsageError(f"cannot read the header of image {path}: {error}") from None


def open_image(path: str | Path | BinaryIO, bit_depth: int | None = None) -> Image.Image:
    """`decode` for the training loaders, which take the pixels as they come."""
    return decode(path, bit_depth=bit_depth)[0]


def range_bits(maximum: float) -> int:
    """The bit depth a maximum pixel value needs, at least 8: 4095 needs 12, 4096 13."""
    return max(8, int(maximum).bit_length())


def rescaled(image: Image.Image, bit_depth: int) -> Image.Image:
    """8-bit grayscale with 0 to 2**bit_depth - 1 spread over 0-255 (values above clip at 255).

    One `bit_depth` for a whole dataset (its range, read once by the dataset check) keeps a raw
    value the same gray in every image: scaling each image by its own maximum made 1000 a 62 in
    one 12-bit X-ray and a 249 in another whose maximum was below 1024. Converting to "L" instead
    clips at 255, which turns most of a 12-bit X-ray white.
    """
    top = 2**bit_depth - 1
    pixels = np.clip(np.asarray(image, dtype=np.float64), 0, top)
    return Image.fromarray((pixels * (255 / top)).round().astype(np.uint8))


def flattened(image: Image.Image) -> Image.Image:
    """RGBA composited onto black: what is transparent shows nothing (an X-ray's background,
    air, is black), where dropping alpha would show whatever colour transparent pixels hold."""
    return Image.alpha_composite(Image.new("RGBA", image.size, "black"), image.convert("RGBA"))
