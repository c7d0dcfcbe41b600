"""A small ChestX-ray14 look-alike in the exact NIH layout, whose labels are learnable from pixels.

`images/*.png` (8-bit grayscale), `Data_Entry_2017.csv` with NIH's columns and NIH-style
names (`00000001_000.png`: patient, follow-up), and the official split files
`train_val_list.txt` / `test_list.txt` (split by patient). Each finding, when present, draws
its own texture (stripes, checks, dots, rings... all unchanged by a horizontal flip, so the
flip augmentation keeps labels true) in its own cell of a 4x4 grid, on a noisy chest-like
background. Everything is drawn from one seed (each image from (seed, its index), so worker
processes can draw them in any order), so the same command writes the same bytes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image

from mgbench.core.safe_files import write_file
from mgbench.datasets.chestxray import (
    FINDINGS_COLUMN,
    IMAGE_COLUMN,
    LABEL_FILE,
    NIH_LABELS,
    NO_FINDING,
    PATIENT_COLUMN,
    TEST_LIST,
    TRAIN_LIST,
)
from mgbench.datasets.output import claim_folder, save_image, writing_into
from mgbench.datasets.parallel import ProgressCallback, check_workers, map_with_progress

FINDING_RATE = 0.15
IMAGES_PER_PATIENT = 2
TEST_PATIENT_SHARE = 0.2
GRID = 4


def texture(kind: int, side: int) -> np.ndarray:
    """A `side` x `side` pattern in [0, 1] for finding `kind`; symmetric under a left-right flip."""
    period = max(4, side // 4)
    y, x = np.mgrid[0:side, 0:side].astype(np.float32)
    x -= (side - 1) / 2
    y -= (side - 1) / 2
    radius = np.hypot(x, y)
    wide, narrow = period, max(2, period // 2)
    patterns = (
        (y // narrow) % 2,  # horizontal stripes, narrow
        (y // wide) % 2,  # horizontal stripes, wide
        (np.abs(x) // narrow) % 2,  # vertical stripes, narrow
        (np.abs(x) // wide) % 2,  # vertical stripes, wide
        ((np.abs(x) // narrow) + (y // narrow)) % 2,  # checks, narrow
        ((np.abs(x) // wide) + (y // wide)) % 2,  # checks, wide
        np.ones_like(x),  # bright square
        np.zeros_like(x),  # dark square
        (radius // narrow) % 2,  # rings
        (radius < side / 3).astype(np.float32),  # disk
        (np.abs(np.abs(x) - np.abs(y)) < narrow / 2).astype(np.float32),  # X
        ((np.abs(x) < narrow / 2) | (np.abs(y) < narrow / 2)).astype(np.float32),  # plus
        ((np.abs(x) % wide < narrow / 2) & (y % wide < narrow / 2)).astype(np.float32),  # dots
        (np.abs(radius - side / 3) < narrow / 2).astype(np.float32),  # circle
    )
    return patterns[kind].astype(np.float32)


def draw_image(findings: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    """A uint8 grayscale image with the textures of `findings` (a 0/1 row of 14) in their cells."""
    y, x = np.mgrid[0:size, 0:size].astype(np.float32) / size
    chest = 0.45 + 0.15 * np.exp(-(((x - 0.5) / 0.35) ** 2 + ((y - 0.55) / 0.45) ** 2))
    image = chest + rng.normal(0.0, 0.03, (size, size))
    cell = size // GRID
    side = int(cell * 0.8)
    for kind in np.flatnonzero(findings):
        row, col = divmod(int(kind) + 1, GRID)  # cells 0 and 15 stay empty
        top, left = row * cell + (cell - side) // 2, col * cell + (cell - side) // 2
        image[top : top + side, left : left + side] = 0.1 + 0.8 * texture(int(kind), side)
    return (np.clip(image, 0.0, 1.0) * 255).round().astype(np.uint8)


def finding_labels(row: np.ndarray) -> str:
    names = [NIH_LABELS[k] for k in np.flatnonzero(row)]
    return "|".join(names) if names else NO_FINDING


def write_image(dst: Path, relative: str, findings: np.ndarray, size: int, seed: int, index: int) -> None:
    """Draw one image and save it as `dst/relative` (a worker's job)."""
    image = Image.fromarray(draw_image(findings, size, np.random.default_rng([seed, index])), mode="L")
    save_image(dst, relative, image)


def make_sample(
    dst: Path,
    n: int,
    size: int = 264,
    seed: int = 0,
    workers: int | None = None,
    on_progress: ProgressCallback = lambda done, total: None,
    overwrite: bool = False,
) -> None:
    """Write `n` images (in parallel), the split lists and, last, the label file under `dst`;
    `on_progress(done, total)` after each image. `dst` is claimed as `output.claim_folder` says."""
    check_workers(workers)
    rng = np.random.default_rng(seed)
    findings = (rng.random((n, len(NIH_LABELS))) < FINDING_RATE).astype(np.int64)
    patients = np.arange(n) // IMAGES_PER_PATIENT + 1
    followups = np.arange(n) % IMAGES_PER_PATIENT
    names = [f"{p:08d}_{f:03d}.png" for p, f in zip(patients, followups)]
    claim_folder(dst, [*(f"images/{name}" for name in names), TRAIN_LIST, TEST_LIST, LABEL_FILE], overwrite)
    jobs = [(dst, f"images/{name}", row, size, seed, index) for index, (name, row) in enumerate(zip(names, findings))]
    with writing_into(dst):
        map_with_progress(write_image, jobs, workers, on_progress)
    labels = pd.DataFrame(
        {
            IMAGE_COLUMN: names,
            FINDINGS_COLUMN: [finding_labels(row) for row in findings],
            "Follow-up #": followups,
            PATIENT_COLUMN: patients,
            "Patient Age": rng.integers(20, 80, n),
            "Patient Gender": rng.choice(["M", "F"], n),
            "View Position": "PA",
            "OriginalImage[Width": size,
            "Height]": size,
            "OriginalImagePixelSpacing[x": 0.143,
            "y]": 0.143,
        }
    )
    test_patients = set(
        rng.permutation(np.unique(patients))[: max(1, round(len(np.unique(patients)) * TEST_PATIENT_SHARE))]
    )
    with writing_into(dst):
        write_file(dst, TRAIN_LIST, "".join(f"{m}\n" for m, p in zip(names, patients) if p not in test_patients))
        write_file(dst, TEST_LIST, "".join(f"{m}\n" for m, p in zip(names, patients) if p in test_patients))
        write_file(dst, LABEL_FILE, labels.to_csv(index=False))
