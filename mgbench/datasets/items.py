"""The samples every native loader hands its workers: one image of a split, decoded and augmented
by the shared `Augmentation`, with its target.

Framework-free map-style datasets (`len`, `[key]`), so torch's DataLoader, Gluon's DataLoader and
Chainer's iterators all read them as their own: the loader supplies the mechanics (workers,
prefetch, batching, distribution) and these the work, identical in every framework.
"""

from __future__ import annotations

import numpy as np

from mgbench.datasets.augment import Augmentation
from mgbench.datasets.description import Split


class TrainItems:
    """The training split keyed by (epoch, index): the augmentation's random draws depend on both.

    `pixels`: (crop, crop, 3) uint8 for loaders that normalise on the device (a quarter of the
    bytes through queues and the bus); else the normalised (3, crop, crop) float32 image.
    """

    def __init__(self, split: Split, augmentation: Augmentation, seed: int, pixels: bool):
        self.split = split
        self.augmentation = augmentation
        self.seed = seed
        self.pixels = pixels

    def __len__(self) -> int:
        return len(self.split)

    def __getitem__(self, key: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
        epoch, index = key
        draw = self.augmentation.train_pixels if self.pixels else self.augmentation.train
        return draw(self.split.files[index], self.seed, epoch, index), self.split.targets[index]


class EvalItems:
    """Images of a held-out split at `indices` (a process's share), centre-cropped; `pixels` as in
    `TrainItems`."""

    def __init__(self, split: Split, augmentation: Augmentation, indices: list[int], pixels: bool):
        self.split = split
        self.augmentation = augmentation
        self.indices = indices
        self.pixels = pixels

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, position: int) -> tuple[np.ndarray, np.ndarray]:
        index = self.indices[position]
        crop = self.augmentation.eval_pixels if self.pixels else self.augmentation.eval
        return crop(self.split.files[index]), self.split.targets[index]
