"""The samples a loader's workers hand over when the training device decodes (`--decode gpu`):
an image file's bytes, the window the shared augmentation takes of it and its target.

Nothing is decoded here: the window is drawn from the image's size, read from its header
(`Augmentation.train_window`, the draw `train_pixels` makes), so the device crops exactly what
the host path would. Framework-free map-style datasets like `items.py`'s, for any loader.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mgbench.datasets.augment import Augmentation
from mgbench.datasets.description import Split
from mgbench.datasets.images import header_size

JPEG_SUFFIXES = (".jpg", ".jpeg")

EncodedItem = tuple[np.ndarray, np.ndarray, np.ndarray]
"""(file bytes as uint8, `Window.as_array()`, target)."""


def all_jpeg(files: list[str]) -> bool:
    """Whether every file is a JPEG, which the device decoders read (PNGs decode on the host)."""
    return all(Path(path).suffix.lower() in JPEG_SUFFIXES for path in files)


def file_bytes(path: str) -> np.ndarray:
    return np.fromfile(path, dtype=np.uint8)


class EncodedTrainItems:
    """The training split keyed by (epoch, index), as `items.TrainItems`, undecoded."""

    def __init__(self, split: Split, augmentation: Augmentation, seed: int):
        self.split, self.augmentation, self.seed = split, augmentation, seed

    def __len__(self) -> int:
        return len(self.split)

    def __getitem__(self, key: tuple[int, int]) -> EncodedItem:
        epoch, index = key
        path = self.split.files[index]
        window = self.augmentation.train_window(header_size(path), self.seed, epoch, index)
        return file_bytes(path), window.as_array(), self.split.targets[index]


class EncodedEvalItems:
    """Images of a held-out split at `indices` with their centre windows, as `items.EvalItems`, undecoded."""

    def __init__(self, split: Split, augmentation: Augmentation, indices: list[int]):
        self.split, self.augmentation, self.indices = split, augmentation, indices

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, position: int) -> EncodedItem:
        path = self.split.files[self.indices[position]]
        window = self.augmentation.eval_window(header_size(path))
        return file_bytes(path), window.as_array(), self.split.targets[self.indices[position]]
