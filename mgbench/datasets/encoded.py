"""The samples a loader's workers hand over when the training device decodes (`--decode gpu`):
an image file's bytes, the window the shared augmentation takes of it and its target.

Nothing is decoded here: the window is drawn from the image's size, read from its header
(`Augmentation.train_window`, the draw `train_pixels` makes), so the device crops exactly what
the host path would. Framework-free map-style datasets like `items.py`'s, for any loader, with
what every loader shares around them: where a run decodes (`decode_site`) and a batch of them
in four arrays (`collated`), sliced or padded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mgbench.datasets.augment import Augmentation
from mgbench.datasets.description import Split
from mgbench.datasets.images import header_size

JPEG_SUFFIXES = (".jpg", ".jpeg")

EncodedItem = tuple[np.ndarray, np.ndarray, np.ndarray]
"""(file bytes as uint8, `Window.as_array()`, target)."""
EncodedArrays = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""A batch of encoded items: the files' bytes end to end, each file's length, their windows (N, 5)
and the targets (`collated`)."""
NOT_ALL_JPEG = ": not all JPEGs, which --decode gpu decodes"
"""What a `--decode gpu` row's decoder adds when the dataset's images are decoded on the host."""


def all_jpeg(files: list[str]) -> bool:
    """Whether every file is a JPEG, which the device decoders read (PNGs decode on the host)."""
    return all(Path(path).suffix.lower() in JPEG_SUFFIXES for path in files)


@dataclass(frozen=True)
class DecodeSite:
    """Where a run's loader decodes: on the training device, or in the workers with `note` saying
    why a `--decode gpu` run decodes there."""

    on_device: bool
    note: str = ""


def decode_site(on_device: bool, files: list[str]) -> DecodeSite:
    """On the device where `--decode gpu` asks (`on_device`) and every image is a JPEG, else in the
    workers: every framework's loader decides alike."""
    if not on_device:
        return DecodeSite(False)
    if all_jpeg(files):
        return DecodeSite(True)
    return DecodeSite(False, NOT_ALL_JPEG)


def collated(items: list[EncodedItem]) -> EncodedArrays:
    """A batch of encoded items with the files' bytes in one array: a worker hands it over as four
    buffers whatever the batch size, and a device decoder splits it by the lengths."""
    data, windows, targets = zip(*items)
    return np.concatenate(data), np.array([len(d) for d in data], np.int64), np.stack(windows), np.stack(targets)


def encoded_items(batch: EncodedArrays, start: int, stop: int) -> EncodedArrays:
    """Items [start, stop) of a collated batch."""
    data, lengths, windows, targets = batch
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    return data[offsets[start] : offsets[stop]], lengths[start:stop], windows[start:stop], targets[start:stop]


def padded_items(batch: EncodedArrays, size: int) -> EncodedArrays:
    """The batch with its last item repeated up to `size` items (a batch that shards evenly)."""
    count = len(batch[1])
    last = encoded_items(batch, count - 1, count)
    return tuple(np.concatenate([part, *[repeated] * (size - count)]) for part, repeated in zip(batch, last))


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
