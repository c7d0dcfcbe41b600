"""The dataset description every adapter trains from, parsed from the `--dataset` string.

`synthetic`, `chestxray:PATH`, `labels:PATH` and `imagefolder:PATH` all become the same
thing: image paths and targets for a training, a validation and a test split (validation
after each epoch, test once after the last), the label names and
whether the task is multi-label (sigmoid + BCE, AUC) or single-label (softmax). Adapters
only turn a `DatasetDescription` into their native loader, so what is read, in which order,
and with which labels is decided once, here. `tokens:PATH`, a language model's token stream, is
parsed here too; `tokens.TokenDataset` describes it.
"""

from __future__ import annotations

import dataclasses
import os
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from mgbench.core.errors import UsageError
from mgbench.core.inputs import ImageInput
from mgbench.core.models import ModelSpec
from mgbench.core.objective import for_labels

SYNTHETIC = "synthetic"
KINDS = ("chestxray", "labels", "imagefolder", "tokens")
SPLITS = ("train", "val", "test")
HELD_OUT = ("val", "test")
"""The splits `Adapter.evaluate` scores."""
FOLDER_KINDS = ("chestxray", "imagefolder", "tokens")
"""Kinds whose PATH is a folder (`labels:PATH` may name its mapping file)."""
VALIDATION_PERCENT = 20
"""Share of images (by patient or group where known) held out for each of validation and test
when the dataset does not name that split itself."""


@dataclass(frozen=True)
class Split:
    files: list[str]
    targets: np.ndarray
    """(N, C) float32 multi-hot rows for multi-label sets, (N,) int64 class indices otherwise."""

    def __len__(self) -> int:
        return len(self.files)

    def without(self, left_out: set[str]) -> Split:
        """The split less the files `left_out` names, targets kept aligned."""
        keep = np.array([path not in left_out for path in self.files], dtype=bool)
        return Split([path for path, kept in zip(self.files, keep) if kept], self.targets[keep])


@dataclass(frozen=True)
class DatasetDescription:
    kind: str
    root: Path
    label_names: tuple[str, ...]
    multi_label: bool
    train: Split
    val: Split
    test: Split
    bit_depth: int | None = None
    """The scale of images wider than 8 bits (`Job.bit_depth`); None: their declared 16 bits."""
    notes: tuple[str, ...] = ()
    """What reading the dataset decided that is right but not obvious (rows read as negative for
    every label), one line each, for the check before launching to say once."""

    @property
    def num_classes(self) -> int:
        return len(self.label_names)

    def split(self, name: str) -> Split:
        """`train`, `val` or `test` by name (what `Adapter.evaluate(split)` is given)."""
        if name not in SPLITS:
            raise ValueError(f"no split {name!r}; splits: {', '.join(SPLITS)}")
        return getattr(self, name)

    @property
    def files(self) -> list[str]:
        return self.train.files + self.val.files + self.test.files

    def as_checked(self, left_out: set[str], bit_depth: int | None) -> DatasetDescription:
        """The dataset as the check before launching found it: the files it left out gone from
        every split, and the range of its wide images."""
        return dataclasses.replace(
            self,
            train=self.train.without(left_out),
            val=self.val.without(left_out),
            test=self.test.without(left_out),
            bit_depth=bit_depth,
        )

    def input_refusal(self, spec: ModelSpec) -> str | None:
        """Why `spec` cannot train on these images (None: it can): it trains on another input."""
        if isinstance(spec.input, ImageInput):
            return None
        return (
            f"--dataset {self.kind}:{self.root} holds images, and {spec.name} trains on {spec.input.describe()} "
            "a sample: give a language model a token stream, --dataset tokens:PATH (`mgbench prepare tokens`)"
        )

    def task_spec(self, spec: ModelSpec) -> ModelSpec:
        """The model with its head fitted to this dataset: one output per label, the objective of
        its labels (`objective.for_labels`)."""
        return dataclasses.replace(spec, num_classes=self.num_classes, objective=for_labels(self.multi_label))

    def steps_per_epoch(self, global_batch: int) -> int:
        """Whole global batches per epoch (the last partial batch is dropped, as every adapter does)."""
        return len(self.train) // global_batch

    def check_batch(self, global_batch: int, shards: int) -> None:
        """Fail before any run starts when an epoch, the validation or the test split is too small."""
        if self.steps_per_epoch(global_batch) < 1:
            raise UsageError(
                f"{self.root}: {len(self.train)} training images cannot fill one global batch of {global_batch}"
            )
        for name in HELD_OUT:
            if len(self.split(name)) < shards:
                raise UsageError(f"{self.root}: {len(self.split(name))} {name} images for {shards} devices")


def hashed_split(groups: Iterable[str], held_out: Iterable[str] = HELD_OUT) -> np.ndarray:
    """`train`, or the held-out split a group (patient, file) falls in, for each group; stable
    across machines. Each held-out split owns its own `VALIDATION_PERCENT` of the hash range
    (val the first, test the second), so a group's split does not depend on which others are
    hashed, and every image of a group lands in one split."""
    slots = [(name, HELD_OUT.index(name) * VALIDATION_PERCENT) for name in held_out]
    assigned = []
    for group in groups:
        bucket = zlib.crc32(os.fsencode(group)) % 100  # a name as the file system holds it, UTF-8 or not
        assigned.append(next((name for name, low in slots if low <= bucket < low + VALIDATION_PERCENT), "train"))
    return np.array(assigned, dtype=object)


def held_out_of_training(assigned: np.ndarray, groups: Iterable[str]) -> np.ndarray:
    """`assigned` (one split name per image, as a dataset names them) with each held-out split it
    lacks taken from its training images by `hashed_split`."""
    missing = [name for name in HELD_OUT if not (assigned == name).any()]
    hashed = hashed_split(groups, missing)
    return np.where(assigned == "train", hashed, assigned)


def splits_by_name(
    files: list[str], targets: np.ndarray, assigned: np.ndarray, root: Path, names: Sequence[str]
) -> tuple[Split, Split, Split]:
    """The train, val and test splits from one split name per image; each must hold an image,
    and no file may be two of them (`refuse_repeated_files`; `names`: the images as the dataset
    names them, for the message)."""
    refuse_repeated_files(files, names, root)
    splits = []
    for name in SPLITS:
        chosen = assigned == name
        if not chosen.any():
            raise UsageError(f"{root}: too few images for a training, a validation and a test split ({len(files)})")
        splits.append(Split([f for f, c in zip(files, chosen) if c], targets[chosen]))
    return splits[0], splits[1], splits[2]


def refuse_repeated_files(files: list[str], names: Sequence[str], root: Path) -> None:
    """One file on disk behind two images of a dataset (`x.png` and `x.jpg` rows that both find
    `x.png`, a class folder linked to `.` or to another class) would train on one image under two
    labels, or test on training images: refused, naming both. Files are the same by device and
    inode, which a link of any kind cannot hide; a file that cannot be read is left to the check
    of every image, which names it."""
    first: dict[tuple[int, int], int] = {}
    for index, path in enumerate(files):
        try:
            status = os.stat(path)
        except OSError:
            continue
        earlier = first.setdefault((status.st_dev, status.st_ino), index)
        if earlier != index:
            raise UsageError(
                f"{root}: {names[earlier]} and {names[index]} are one image file ({os.path.realpath(path)}); "
                "list each image once"
            )


def shown_names(names: Sequence[str], limit: int = 5) -> str:
    """The first `limit` of `names`, comma-separated, and how many more: for one-line errors."""
    more = len(names) - limit
    return ", ".join(names[:limit]) + (f" and {more} more" if more > 0 else "")


def read_label_csv(path: Path, columns: tuple[str, ...]) -> pd.DataFrame:
    """A label CSV as text (an empty cell stays ''), or one error naming the file: unreadable,
    empty (zero bytes) or without one of `columns`."""
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as error:
        raise UsageError(f"cannot read label file {path}: {error}") from None
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise UsageError(f"{path}: missing column(s) {', '.join(map(repr, missing))}")
    return frame


def parse_dataset(text: str) -> tuple[str, Path | None]:
    """`synthetic` or `KIND:PATH`, with the path checked to exist."""
    if text == SYNTHETIC:
        return SYNTHETIC, None
    kind, sep, path = text.partition(":")
    if not sep or kind not in KINDS or not path:
        raise UsageError(f"unknown dataset {text!r}; use synthetic, " + ", ".join(f"{k}:PATH" for k in KINDS))
    try:
        root = Path(path).expanduser()
    except RuntimeError:
        raise UsageError(f"dataset path {path}: no such user's home folder") from None
    if not root.exists():
        raise UsageError(f"dataset path {root} does not exist")
    if kind in FOLDER_KINDS and not root.is_dir():
        raise UsageError(f"dataset path {root} is not a folder; {kind}:PATH takes the folder that holds the dataset")
    return kind, root
