"""The samples a loader's workers hand over when the training device decodes (`--decode gpu`):
an image file's bytes, the window the shared augmentation takes of it and its target.

Nothing is decoded here: the window is drawn from the image's size, read from its header
(`Augmentation.train_window`, the draw `train_pixels` makes), so the device crops exactly what
the host path would. Framework-free map-style datasets like `items.py`'s, for any loader, with
what every loader shares around them: where a run decodes (`decode_site`) and a batch of them
in four arrays (`collated`), sliced or padded.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

from mgbench.datasets.augment import Augmentation, Window
from mgbench.datasets.description import Split
from mgbench.datasets.images import Header, decode, open_image, read_header

JPEG_SUFFIXES = (".jpg", ".jpeg")


class EncodedItem(NamedTuple):
    """One sample as a worker reads it for a device decoder."""

    data: np.ndarray
    """The file's bytes, uint8 (`device_file`)."""
    window: np.ndarray
    """`Window.as_array()`: the crop and flip the shared augmentation draws."""
    target: np.ndarray
    size: tuple[int, int]
    """The image's (width, height), from the header the window was drawn from: what a collation
    that plans the device's crop reads instead of parsing the file's header again."""


EncodedArrays = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""A batch of encoded items: the files' bytes end to end, each file's length, their windows (N, 5)
and the targets (`collated`)."""
NOT_ALL_JPEG = ": not all JPEGs, which --decode gpu decodes"
"""What a `--decode gpu` row's decoder adds when the dataset's images are decoded on the host."""


def jpeg_named(path: str) -> bool:
    return Path(path).suffix.lower() in JPEG_SUFFIXES


def all_jpeg(files: list[str]) -> bool:
    """Whether every file is named a JPEG, which the device decoders read (PNGs decode on the
    host; an image of another kind under a JPEG name is re-encoded, `device_file`)."""
    return all(jpeg_named(path) for path in files)


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


def collated_files(items: list[EncodedItem]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The items' files' bytes end to end in one array, each file's length and their windows (N,
    5): a worker hands them over as three buffers whatever the batch size, and a device decoder
    splits the bytes by the lengths."""
    data = [item.data for item in items]
    return np.concatenate(data), np.array([len(d) for d in data], np.int64), np.stack([item.window for item in items])


def collated(items: list[EncodedItem]) -> EncodedArrays:
    """A batch of encoded items as four arrays: `collated_files` and the targets."""
    return *collated_files(items), np.stack([item.target for item in items])


def host_pixels(items: list[EncodedItem], augmentation: Augmentation) -> np.ndarray:
    """(N, crop, crop, 3) uint8: the items decoded from their bytes and cropped to their windows
    on the host, as the host path decodes and crops their files (`Augmentation.window_pixels`):
    the share of a batch a loader's workers decode when the device decodes the rest
    (`--decode-host-share`)."""
    crop = augmentation.crop
    pixels = np.empty((len(items), crop, crop, 3), dtype=np.uint8)
    for n, item in enumerate(items):
        pixels[n] = augmentation.window_pixels(
            open_image(io.BytesIO(item.data.tobytes())), Window.of_array(item.window)
        )
    return pixels


def encoded_items(batch: EncodedArrays, start: int, stop: int) -> EncodedArrays:
    """Items [start, stop) of a collated batch."""
    data, lengths, windows, targets = batch
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    return data[offsets[start] : offsets[stop]], lengths[start:stop], windows[start:stop], targets[start:stop]


def padded_items(batch: EncodedArrays, size: int) -> EncodedArrays:
    """The batch with its last item repeated up to `size` items (a batch that shards evenly)."""
    count = len(batch[1])
    last = encoded_items(batch, count - 1, count)
    data, lengths, windows, targets = (
        np.concatenate([part, *[repeated] * (size - count)]) for part, repeated in zip(batch, last)
    )
    return data, lengths, windows, targets


DEVICE_JPEG_MODES = ("RGB", "L")
"""The JPEGs a device decoder reads as they are: 8-bit colour and grayscale."""
REENCODED_QUALITY = 95


def device_readable(header: Header) -> bool:
    """Whether a device decoder reads the image of `header` as it is: an 8-bit RGB or grayscale JPEG."""
    return header.format == "JPEG" and header.mode in DEVICE_JPEG_MODES


def device_file(path: str, bit_depth: int | None = None) -> tuple[np.ndarray, tuple[int, int]]:
    """The bytes a device decoder is handed for `path`, and the image's (width, height).

    An 8-bit RGB or grayscale JPEG is handed over as it is. Any other image under a JPEG name
    (ImageNet's training set holds a PNG named `.JPEG` and CMYK JPEGs) is not for a device
    decoder: torchvision's GPU decoder raises on a PNG's bytes and on a CMYK JPEG, so the batch
    holding one would fail minutes into a run. Such a file is handed over as its
    pixels as the host path decodes them (`images.decode`, wide pixels scaled by the dataset's
    `bit_depth`), re-encoded as a JPEG of quality 95 with full-resolution colour: its pixels then
    differ from the host path's by that encoding's loss besides the device decode's own
    difference."""
    header = read_header(path)
    if device_readable(header):
        return np.fromfile(path, dtype=np.uint8), header.size
    pixels, _ = decode(path, bit_depth=bit_depth)
    buffer = io.BytesIO()
    pixels.save(buffer, "JPEG", quality=REENCODED_QUALITY, subsampling=0)
    return np.frombuffer(buffer.getvalue(), dtype=np.uint8), header.size


class EncodedTrainItems:
    """The training split keyed by (epoch, index), as `items.TrainItems`, undecoded."""

    def __init__(self, split: Split, augmentation: Augmentation, seed: int):
        self.split, self.augmentation, self.seed = split, augmentation, seed

    def __len__(self) -> int:
        return len(self.split)

    def __getitem__(self, key: tuple[int, int]) -> EncodedItem:
        epoch, index = key
        data, size = device_file(self.split.files[index], self.augmentation.bit_depth)
        window = self.augmentation.train_window(size, self.seed, epoch, index)
        return EncodedItem(data, window.as_array(), self.split.targets[index], size)


class EncodedEvalItems:
    """Images of a held-out split at `indices` with their centre windows, as `items.EvalItems`, undecoded."""

    def __init__(self, split: Split, augmentation: Augmentation, indices: list[int]):
        self.split, self.augmentation, self.indices = split, augmentation, indices

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, position: int) -> EncodedItem:
        data, size = device_file(self.split.files[self.indices[position]], self.augmentation.bit_depth)
        window = self.augmentation.eval_window(size)
        return EncodedItem(data, window.as_array(), self.split.targets[self.indices[position]], size)
