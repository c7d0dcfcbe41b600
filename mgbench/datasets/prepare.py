"""Resize a ChestX-ray14 folder once, so training decodes 264 px files instead of 1024 px ones.

Images are resized in parallel worker processes (shorter side to `size`, bilinear, 8-bit
grayscale: 16-bit images scaled by their range, alpha flattened onto black, both counted) into
`DST/images/`; the label file and the split lists are copied unchanged
(loaders match images by file stem, so `x.png` in the CSV finds `x.jpg`). An image that cannot
be decoded is listed in the returned report and in `DST/skipped.txt`, and left out (its CSV row
too), so one bad file never stops the preparation.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from PIL import Image

from mgbench.common.errors import UsageError
from mgbench.datasets.chestxray import IMAGE_COLUMN, LABEL_FILE, TEST_LIST, TRAIN_LIST, read_entries
from mgbench.datasets.images import check_decodable, decode, index_images
from mgbench.datasets.parallel import ProgressCallback, map_with_progress

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


def resize_one(source: str, target: str, size: int) -> tuple[str | None, str | None]:
    """Resize one image to 8-bit grayscale; (the reason it failed, the conversion it needed), each or None."""
    try:
        image, conversion = decode(source, grayscale=True)
    except UsageError as error:
        return str(error), None
    scale = size / min(image.size)
    image = image.resize((round(image.width * scale), round(image.height * scale)), Image.Resampling.BILINEAR)
    image.save(target, quality=JPEG_QUALITY) if target.endswith(".jpg") else image.save(target)
    return None, conversion


def prepare_chestxray(
    src: Path,
    dst: Path,
    size: int,
    image_format: str,
    workers: int | None = None,
    on_progress: ProgressCallback = lambda done, total: None,
) -> PrepareReport:
    """Resize every image the label file lists; `on_progress(done, total)` after each image."""
    if image_format not in FORMATS:
        raise UsageError(f"unknown image format {image_format!r}; choose from {', '.join(FORMATS)}")
    if size < 16:
        raise UsageError(f"size must be at least 16 px, got {size}")
    csv_path = src / LABEL_FILE
    if not csv_path.is_file():
        raise UsageError(f"{src}: no {LABEL_FILE} (the NIH label file)")
    entries = read_entries(csv_path)
    index = index_images(src)
    absent = [name for name in entries["file"] if Path(name).stem not in index]
    if absent:
        raise UsageError(f"{csv_path} lists {len(absent)} image(s) that are not in {src}, e.g. {absent[0]}")
    names = list(dict.fromkeys(entries["file"]))  # each listed file once
    sources = [str(index[Path(name).stem]) for name in names]
    check_decodable(sources, src)
    (dst / "images").mkdir(parents=True, exist_ok=True)
    jobs = [(source, str(dst / "images" / (Path(name).stem + FORMATS[image_format])), size) for source, name in zip(sources, names)]
    results = map_with_progress(resize_one, jobs, workers, on_progress)
    reasons = [reason for reason, _ in results]
    report = PrepareReport(
        written=reasons.count(None),
        skipped=[reason for reason in reasons if reason is not None],
        converted=dict(Counter(conversion for _, conversion in results if conversion is not None)),
    )
    skipped_names = {name for name, reason in zip(names, reasons) if reason is not None}
    frame = pd.read_csv(csv_path, dtype=str, keep_default_na=False)
    frame[~frame[IMAGE_COLUMN].isin(skipped_names)].to_csv(dst / LABEL_FILE, index=False)
    for name in (TRAIN_LIST, TEST_LIST):
        if (src / name).is_file():
            kept = [line for line in (src / name).read_text().splitlines() if line.strip() not in skipped_names]
            (dst / name).write_text("".join(f"{line}\n" for line in kept))
    (dst / SKIPPED_FILE).write_text("".join(f"{reason}\n" for reason in report.skipped))
    return report
