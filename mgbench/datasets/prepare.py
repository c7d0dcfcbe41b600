"""Resize a ChestX-ray14 folder once, so training decodes 264 px files instead of 1024 px ones.

Images are resized in parallel worker processes (shorter side to `size`, bilinear, 8-bit
grayscale: 16-bit images scaled by the source's range, alpha flattened onto black, both
counted) into `DST/images/`; the label file and the split lists are copied (loaders match
images by file stem, so `x.png` in the CSV finds `x.jpg`). Every image is checked first
(`check.check_files`, which also reads the source's range); one that cannot be decoded is
listed in the returned report and in `DST/skipped.txt`, and left out (its CSV row too), so one
bad file never stops the preparation. DST lies outside SRC and is new, empty or an earlier prepare's output
(`output.claim_folder`); the label file is written last, so a DST without one is incomplete.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image

from mgbench.core.errors import UsageError
from mgbench.core.job import image_size_refusal
from mgbench.core.safe_files import write_file
from mgbench.datasets.check import check_files
from mgbench.datasets.chestxray import IMAGE_COLUMN, LABEL_FILE, TEST_LIST, TRAIN_LIST, read_entries
from mgbench.datasets.description import read_label_csv
from mgbench.datasets.images import decode, index_images, resolve_files
from mgbench.datasets.output import claim_folder, save_image, writing_into
from mgbench.datasets.parallel import ProgressCallback, check_workers, map_with_progress

FORMATS = {"png": ".png", "jpeg": ".jpg"}
JPEG_QUALITY = 95
SKIPPED_FILE = "skipped.txt"


@dataclass
class PrepareReport:
    written: int = 0
    skipped: list[str] = field(default_factory=list)
    """`path: reason` for each image that could not be decoded."""
    converted: dict[str, int] = field(default_factory=dict)
    """How many images each conversion beyond 8-bit grayscale changed (`images.RESCALED`, ...)."""
    bit_depth: int | None = None
    """The source's range, by which every image wider than 8 bits was scaled (None: none was)."""


def resize_one(source: str, dst: Path, target: str, size: int, bit_depth: int | None) -> tuple[str | None, str | None]:
    """Resize one image to 8-bit grayscale, wide pixels scaled by the dataset's `bit_depth`, into
    `dst/target` (in the format its suffix names; a JPEG's quality is JPEG_QUALITY, which PNG
    ignores); (the reason it failed, the conversion it needed), each or None."""
    try:
        image, conversion = decode(source, grayscale=True, bit_depth=bit_depth)
    except UsageError as error:
        return str(error), None
    scale = size / min(image.size)
    image = image.resize((round(image.width * scale), round(image.height * scale)), Image.Resampling.BILINEAR)
    save_image(dst, target, image, quality=JPEG_QUALITY)
    return None, conversion


def check_apart(src: Path, dst: Path) -> None:
    """Refuse a destination that is the source, inside it or around it: prepare would overwrite
    the originals, or leave resized copies where the next prepare and the loaders, which find
    images anywhere below a folder, would take them for originals."""
    source, target = src.resolve(), dst.resolve()
    if target == source or source in target.parents or target in source.parents:
        raise UsageError(
            f"destination {dst} overlaps the source {src}: choose a folder outside it (SRC is never written)"
        )


def prepare_chestxray(
    src: Path,
    dst: Path,
    size: int,
    image_format: str,
    workers: int | None = None,
    on_progress: ProgressCallback = lambda done, total: None,
    overwrite: bool = False,
) -> PrepareReport:
    """Resize every image the label file lists; `on_progress(done, total)` after each image.

    Everything that can be refused is checked before DST is touched; `overwrite` replaces what
    an earlier prepare wrote to DST (see `output.claim_folder`).
    """
    if image_format not in FORMATS:
        raise UsageError(f"unknown image format {image_format!r}; choose from {', '.join(FORMATS)}")
    if refusal := image_size_refusal(size):
        raise UsageError(f"--size: {refusal}")
    check_workers(workers)
    check_apart(src, dst)
    csv_path = src / LABEL_FILE
    if not csv_path.is_file():
        raise UsageError(f"{src}: no {LABEL_FILE} (the NIH label file)")
    names = list(read_entries(csv_path)["file"])
    sources = resolve_files(names, index_images(src), csv_path)
    found = check_files(sources, workers)
    if len(found.bad) == len(sources):
        raise UsageError(f"{src}: none of its {len(sources)} images can be decoded: {found.listing(src, 5)}")
    frame = read_label_csv(csv_path, (IMAGE_COLUMN,))
    split_lists = {
        name: (src / name).read_text().splitlines() for name in (TRAIN_LIST, TEST_LIST) if (src / name).is_file()
    }
    targets = [f"images/{Path(name).stem}{FORMATS[image_format]}" for name in names]
    claim_folder(dst, [*targets, TRAIN_LIST, TEST_LIST, SKIPPED_FILE, LABEL_FILE], overwrite)
    with writing_into(dst):
        todo = [index for index, source in enumerate(sources) if source not in found.bad]
        jobs = [(sources[index], dst, targets[index], size, found.bit_depth) for index in todo]
        results = dict(zip(todo, map_with_progress(resize_one, jobs, workers, on_progress)))
        reasons = [
            results[index][0] if index in results else f"cannot decode image {source}: {found.bad[source]}"
            for index, source in enumerate(sources)
        ]
        report = PrepareReport(
            written=reasons.count(None),
            skipped=[reason for reason in reasons if reason is not None],
            converted=dict(Counter(conversion for _, conversion in results.values() if conversion is not None)),
            bit_depth=found.bit_depth,
        )
        skipped_names = {name for name, reason in zip(names, reasons) if reason is not None}
        for name, lines in split_lists.items():
            kept = [line for line in lines if line.strip() not in skipped_names]
            write_file(dst, name, "".join(f"{line}\n" for line in kept))
        write_file(dst, SKIPPED_FILE, "".join(f"{reason}\n" for reason in report.skipped))
        kept_rows = frame[~frame[IMAGE_COLUMN].str.strip().isin(skipped_names)]
        write_file(dst, LABEL_FILE, kept_rows.to_csv(index=False))
    return report
