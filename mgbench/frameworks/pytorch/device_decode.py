"""`--decode gpu` over torch's DataLoader: the workers read file bytes, draw each image's window
(`datasets/encoded.py`) and plan the batch's crop (`PlannedCollate`); the training process
decodes the batch on its device with torchvision's decoder (nvJPEG on CUDA) and crops it there
as planned (`device_crop.py`).

The host then spends per image a header read and a file read instead of a decode and a resize,
and the bus carries the compressed bytes. The decoded batch is normalised as the host path's
device finish normalises its pixels (`normalise.py`). With `--decode-host-share` the workers
decode and crop the first images of each batch as the host path does, and hand their pixels over
beside the others' bytes: the batch keeps its order.
"""

from __future__ import annotations

import collections
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import torch
from torchvision.io import ImageReadMode, decode_jpeg

from mgbench.datasets.augment import Augmentation
from mgbench.datasets.description import Split
from mgbench.datasets.encoded import EncodedEvalItems, EncodedItem, EncodedTrainItems, collated_files, host_pixels
from mgbench.datasets.images import host_decoder
from mgbench.frameworks.pytorch.device_crop import CropPlan, crop_plan, cropped, planned_crops
from mgbench.frameworks.pytorch.normalise import normalised_pixels
from mgbench.frameworks.pytorch.packed import packed, unpacked
from mgbench.frameworks.pytorch.spec import NVJPEG
from mgbench.training.prefetch import Ahead


class EncodedBatch(NamedTuple):
    """A batch of files for the device to decode: the images' file bytes end to end, each file's
    length, their windows (N, 5), the targets of the whole batch, the plan of their crop (none
    where the loader hands over no plan: it is made where the batch is placed), and the pixels
    (K, crop, crop, 3) of the batch's first K images, which the workers decoded (none: the
    device decodes all). The targets are the K images' first, then the files'."""

    data: torch.Tensor
    lengths: torch.Tensor
    windows: torch.Tensor
    targets: torch.Tensor
    plan: CropPlan | None = None
    hosted: torch.Tensor | None = None


@dataclass(frozen=True)
class PackedBatch:
    """An `EncodedBatch` as a worker hands it over: its ten arrays in one buffer (`packed.py`),
    which the DataLoader's pinning thread takes back and pins once (`pin_memory`)."""

    buffer: torch.Tensor

    def pin_memory(self) -> PackedBatch:
        return PackedBatch(self.buffer.pin_memory())

    def parts(self) -> EncodedBatch:
        """The batch's arrays as views of the buffer."""
        data, lengths, windows, targets, hosted, *plan = unpacked(self.buffer)
        return EncodedBatch(data, lengths, windows, targets, CropPlan(*plan), hosted)


def encoded_parts(batch: PackedBatch | EncodedBatch | tuple[torch.Tensor, ...]) -> EncodedBatch:
    """A batch's parts: PyTorch's loader packs the plan of each batch's crop with it
    (`PlannedCollate`); a batch of four parts (Keras' PyDataset's, whose pipe would carry a plan
    slowly) has none, and is planned where it is placed."""
    return batch.parts() if isinstance(batch, PackedBatch) else EncodedBatch(*batch)


def decoded_shapes(items: list[EncodedItem]) -> np.ndarray:
    """(N, 3) int64: (channels, height, width) of each item once `decoded_images` decodes it (RGB:
    three channels), from the size its header gave when the item was read."""
    return np.array([(3, height, width) for width, height in (item.size for item in items)], dtype=np.int64)


@dataclass(frozen=True)
class PlannedCollate:
    """The workers' collation: `encoded.collated`'s arrays with the plan of the batch's crop to
    `crop` px, made from the sizes the items' headers gave (`device_crop.crop_plan`: no header is
    read again), packed in one buffer. The plan is numpy over a batch of boxes, which in the
    training process would hold the interpreter's lock from the threads that launch the step.
    With a `host_share`, the batch's first images (that share, rounded down) are decoded and
    cropped here (`encoded.host_pixels`) instead."""

    crop: int
    host_share: float = 0.0

    def __call__(self, items: list[EncodedItem]) -> PackedBatch:
        hosted = int(self.host_share * len(items))
        pixels = host_pixels(items[:hosted], Augmentation.for_input(self.crop))
        data, lengths, windows = collated_files(items[hosted:])
        targets = np.stack([item.target for item in items])
        plan = crop_plan(decoded_shapes(items[hosted:]), windows, self.crop)
        return PackedBatch(packed([data, lengths, windows, targets, pixels, *plan]))


def settled(device: torch.device) -> None:
    """Wait for the work queued on the current stream before the CUDA decoder allocates: it writes
    its outputs from a stream of its own that does not wait on the caller's, so a block the caching
    allocator hands it may still be read by queued kernels (pytorch/vision#9606). `DecodedAhead`
    has no need: it decodes on a stream nothing else is queued on."""
    if device.type == "cuda":
        torch.cuda.current_stream(device).synchronize()


def decoded_files(data: torch.Tensor, lengths: torch.Tensor, device: torch.device) -> list[torch.Tensor]:
    """The files end to end in `data` (host), split by `lengths`, decoded on `device` by
    torchvision's decoder as CHW uint8 RGB images, allocated on the current stream, which waits
    for them."""
    return decode_jpeg(list(torch.split(data, lengths.tolist())), mode=ImageReadMode.RGB, device=device)


def decoded_images(data: torch.Tensor, lengths: torch.Tensor, device: torch.device) -> list[torch.Tensor]:
    """`decoded_files` on the current stream, once it is `settled`."""
    settled(device)
    return decoded_files(data, lengths, device)


def decoded_crops(
    data: torch.Tensor, lengths: torch.Tensor, windows: torch.Tensor, device: torch.device, crop: int
) -> torch.Tensor:
    """(N, 3, crop, crop) uint8 on `device`: `decoded_images` cropped to their `windows`
    (`device_crop.cropped`, planned here), on the current stream."""
    return cropped(decoded_images(data, lengths, device), windows, crop)


@dataclass(frozen=True)
class DecodedOnDevice:
    """Places encoded batches: decoded on `device`, cropped to `crop`, normalised in the model's
    memory format, labels beside them."""

    device: torch.device
    crop: int
    channels_last: bool

    def __call__(
        self, batch: PackedBatch | EncodedBatch | tuple[torch.Tensor, ...], non_blocking: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The batch's images and targets on the device, decoded on the current stream once it is
        `settled`."""
        parts = encoded_parts(batch)
        return self.finished(decoded_images(parts.data, parts.lengths, self.device), parts, non_blocking)

    def finished(
        self, images: list[torch.Tensor], parts: EncodedBatch, non_blocking: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The batch's decoded `images` cropped as planned (or as planned here, where the batch
        brings no plan), after the pixels the workers decoded, normalised, and its targets, on the
        current stream."""
        plan = parts.plan
        crops = cropped(images, parts.windows, self.crop) if plan is None else planned_crops(images, plan, self.crop)
        if parts.hosted is not None and len(parts.hosted):
            hosted = parts.hosted.to(self.device, non_blocking=non_blocking).permute(0, 3, 1, 2)
            crops = torch.cat([hosted, crops])
        return normalised_pixels(crops, self.channels_last), parts.targets.to(self.device, non_blocking=non_blocking)

    def staged(self, host_batches: Iterator[PackedBatch | tuple[torch.Tensor, ...]]) -> DecodedAhead:
        """The batches decoded ahead of the step that takes them, off the training thread."""
        return DecodedAhead(host_batches, self)


@functools.cache
def _highest_priority_stream(device: torch.device) -> torch.cuda.Stream:
    return torch.cuda.Stream(device, priority=torch.cuda.Stream.priority_range()[1])


def outranking(device: torch.device) -> None:
    """Moves this thread's work on `device` onto a stream of CUDA's highest priority, one per
    device, after the work already queued on its current stream: where the training step runs
    when its device also decodes (`DecodedAhead`). Called before the model is built."""
    stream = _highest_priority_stream(device)
    current = torch.cuda.current_stream(device)
    if current != stream:
        stream.wait_stream(current)
        torch.cuda.set_stream(stream)


class DecodedAhead:
    """Decodes and crops batch k+1 on a side stream, on a thread of its own, during step k.

    The decoder blocks the thread that calls it (it waits for its own stream before returning): on
    the training thread that would hold back the launches of the step, so the device's queue would
    run dry; here only this thread waits. The step's stream waits for each batch's event before
    reading it.

    The decoder allocates its outputs on a stream nothing else is queued on (`decoding`), and each
    batch's decoded images are held until the crop that reads them has run (`held`): so the
    allocator never hands the decoder a block a queued kernel still reads, without waiting for the
    side stream first (`settled`), where the previous batch's crop waits for the SMs the step
    leaves free and the decode of the next would wait behind it.

    The step outranks the decode: the adapter puts the training thread's work on a stream of
    CUDA's highest priority (`outranking`), and the side stream, like the decoder's own, has the
    default. The decode's kernels then take the SMs the step leaves free, where at equal or
    higher priority they took SMs from the step's kernels: the step waits for none of them, and
    batch k+1 is needed only when step k ends."""

    priority = 0
    """The side stream's CUDA priority (lower is higher; 0 is the default)."""

    def __init__(self, host_batches: Iterator[PackedBatch | tuple[torch.Tensor, ...]], place: DecodedOnDevice):
        self.place = place
        self.stream = torch.cuda.Stream(place.device, priority=self.priority)
        self.decoding = torch.cuda.Stream(place.device, priority=self.priority)
        self.held: collections.deque[tuple[torch.cuda.Event, list[torch.Tensor]]] = collections.deque()
        self.ahead = Ahead(self._placed(batch) for batch in host_batches)

    def _placed(
        self, batch: PackedBatch | tuple[torch.Tensor, ...]
    ) -> tuple[torch.Tensor, torch.Tensor, torch.cuda.Event]:
        parts = encoded_parts(batch)
        while self.held and self.held[0][0].query():
            self.held.popleft()
        with torch.cuda.stream(self.decoding):
            images = decoded_files(parts.data, parts.lengths, self.place.device)
        self.stream.wait_stream(self.decoding)
        with torch.cuda.stream(self.stream):
            pixels, labels = self.place.finished(images, parts, True)
            done = torch.cuda.Event()
            done.record(self.stream)
        self.held.append((done, images))
        return pixels, labels, done

    def __iter__(self) -> DecodedAhead:
        return self

    def close(self) -> None:
        """Stops the decoding thread, which lets go of the loader's iterator."""
        self.ahead.close()

    def __next__(self) -> tuple[torch.Tensor, torch.Tensor]:
        images, labels, done = next(self.ahead)
        step_stream = torch.cuda.current_stream(self.place.device)
        step_stream.wait_event(done)
        images.record_stream(step_stream)
        labels.record_stream(step_stream)
        return images, labels


@dataclass(frozen=True)
class DeviceDecoding:
    """The loader's items, collation and placement where the training device decodes: what
    `data.build_loaders` builds its DataLoaders from and the adapter places their batches with;
    the workers decode `host_share` of each batch (`--decode-host-share`)."""

    place: DecodedOnDevice
    host_share: float = 0.0

    @property
    def collate(self) -> PlannedCollate:
        return PlannedCollate(self.place.crop, self.host_share)

    @property
    def decoder(self) -> str:
        shared = f"; {self.host_share:.0%} of each batch by {host_decoder()}" if self.host_share else ""
        return f"{NVJPEG} on {self.place.device}, crop on device{shared}"

    def train_items(self, split: Split, augmentation: Augmentation, seed: int) -> EncodedTrainItems:
        return EncodedTrainItems(split, augmentation, seed)

    def eval_items(self, split: Split, augmentation: Augmentation, indices: list[int]) -> EncodedEvalItems:
        return EncodedEvalItems(split, augmentation, indices)
