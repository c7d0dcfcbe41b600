"""`imagefolder:PATH`: ImageNet-style class folders, one class per sub-folder.

With `train/` and `val/` below PATH those are the splits (a validation class that training
does not have is an error); otherwise the class folders sit directly in PATH and a stable
hash of each file name picks the validation share.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mgbench.common.errors import UsageError
from mgbench.datasets.description import DatasetDescription, Split, hashed_validation, split_by_mask
from mgbench.datasets.images import IMAGE_SUFFIXES


def class_folders(root: Path) -> list[Path]:
    folders = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not folders:
        raise UsageError(f"{root}: no class folders")
    return folders


def scan(root: Path, classes: tuple[str, ...]) -> Split:
    files, targets = [], []
    for folder in class_folders(root):
        if folder.name not in classes:
            raise UsageError(f"{folder}: class {folder.name!r} is not among the training classes")
        images = sorted(p for p in folder.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES)
        files += [str(p) for p in images]
        targets += [classes.index(folder.name)] * len(images)
    if not files:
        raise UsageError(f"{root}: no images in its class folders")
    return Split(files, np.asarray(targets, dtype=np.int64))


def describe(root: Path) -> DatasetDescription:
    if (root / "train").is_dir() and (root / "val").is_dir():
        classes = tuple(p.name for p in class_folders(root / "train"))
        train, val = scan(root / "train", classes), scan(root / "val", classes)
    else:
        classes = tuple(p.name for p in class_folders(root))
        whole = scan(root, classes)
        names = [str(Path(f).relative_to(root)) for f in whole.files]
        train, val = split_by_mask(whole.files, whole.targets, hashed_validation(names), root)
    return DatasetDescription("imagefolder", root, classes, False, train, val)
