"""`imagefolder:PATH`: ImageNet-style class folders, one class per sub-folder.

With `train/` below PATH, it and whichever of `val/` and `test/` exist are the splits (a
held-out class that training does not have is an error), and a held-out split without its
folder is a stable hash of the training file names; without `train/` the class folders sit
directly in PATH and that hash picks both the validation and the test share. It takes two
classes or more: over one, top-1 is 1 whatever the model and AUC has no value. Each training
class folder needs an image: one without is a class of the model's output that nothing trains,
refused naming it as bad data is; a held-out split may lack a class. One image file behind two
of its paths (a class folder linked to `.` or to another class) is refused.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mgbench.core.errors import UsageError
from mgbench.datasets.description import SPLITS, DatasetDescription, Split, held_out_of_training, splits_by_name
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


def check_every_class_trains(top: Path, classes: tuple[str, ...], training: Split) -> None:
    """Refuse, naming them all, the class folders of `top` that hold no image of the training split."""
    counts = np.bincount(training.targets, minlength=len(classes))
    empty = [str(top / name) for name, count in zip(classes, counts) if count == 0]
    if empty:
        raise UsageError(
            f"class folders without images: {', '.join(empty)}; each is a class of the model's output that "
            "no image trains: remove them or add images"
        )


def describe(root: Path) -> DatasetDescription:
    top = root / "train" if (root / "train").is_dir() else root
    classes = tuple(p.name for p in class_folders(top))
    if len(classes) < 2:
        raise UsageError(
            f"{top}: one class folder ({classes[0]}); top-1 over one class is 1 whatever the model: "
            "class folders need two classes or more"
        )
    scanned = {name: scan(root / name, classes) for name in SPLITS if top != root and (root / name).is_dir()}
    scanned = scanned or {"train": scan(root, classes)}
    check_every_class_trains(top, classes, scanned["train"])
    files = [f for split in scanned.values() for f in split.files]
    targets = np.concatenate([split.targets for split in scanned.values()])
    named = np.concatenate([np.full(len(split), name, object) for name, split in scanned.items()])
    names = [str(Path(f).relative_to(root)) for f in files]
    splits = splits_by_name(files, targets, held_out_of_training(named, names), root, names)
    return DatasetDescription("imagefolder", root, classes, False, *splits)
