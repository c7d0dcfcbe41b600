"""PyTorch's native loader over the shared datasets: `torch.utils.data.DataLoader`, and the input
staging of the strategies.

The DataLoader's worker processes (persistent, pinned memory on CUDA) read `items.TrainItems`
through the shared epoch sampler (`sampling.EpochBatchKeys`), so they decode, crop, flip and
label exactly what every other framework's loader does; items travel as uint8 pixels and are
normalised on the device (`placed_images`). Staged input (`ddp`, `dp`, `dp-loss`, Horovod's
`hvd`) copies batch k+1 on a side stream during step k (`DevicePrefetcher`); unstaged input
(`ddp-unstaged`) copies each batch with a plain `.to(device)` when the step takes it.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass

import torch

from mgbench.common.config import RunConfig
from mgbench.common.protocol import Placement
from mgbench.common.workers import loader_workers
from mgbench.datasets.augment import IMAGENET_MEAN, IMAGENET_STD, Augmentation
from mgbench.datasets.description import HELD_OUT, DatasetDescription
from mgbench.datasets.items import EvalItems, TrainItems
from mgbench.datasets.sampling import EpochBatchKeys, validation_indices
from mgbench.datasets.synthetic import Shard


@functools.cache
def _imagenet_statistics(device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and standard deviation as (1, 3, 1, 1) tensors, made once per device."""
    return tuple(torch.as_tensor(v, device=device).view(1, 3, 1, 1) for v in (IMAGENET_MEAN, IMAGENET_STD))


def placed_images(
    images: torch.Tensor, device: torch.device, channels_last: bool, non_blocking: bool = False
) -> torch.Tensor:
    """A host batch on `device`, in the model's memory format.

    uint8 batches are the real-data loaders' NHWC pixels (`Augmentation.*_pixels`): they travel
    as bytes, a quarter of float32's, and are normalised here as `augment.normalise` does on the host.
    """
    images = images.to(device, non_blocking=non_blocking)
    if images.dtype == torch.uint8:
        mean, std = _imagenet_statistics(device)
        images = (images.permute(0, 3, 1, 2).float() / 255.0 - mean) / std
    return images.contiguous(memory_format=torch.channels_last if channels_last else torch.contiguous_format)


class DevicePrefetcher:
    """Copies batch k+1 from pinned host memory to the device on a side stream during step k.

    Takes any iterator of host batches (a cycled synthetic pool, or a DataLoader with
    `pin_memory`) and ends when it ends.
    """

    def __init__(
        self, host_batches: Iterator[tuple[torch.Tensor, torch.Tensor]], device: torch.device, channels_last: bool
    ):
        self.host_batches = host_batches
        self.device = device
        self.channels_last = channels_last
        self.stream = torch.cuda.Stream(device)
        self.pending = self._start_copy()

    def _start_copy(self) -> tuple[torch.Tensor, torch.Tensor] | None:
        batch = next(self.host_batches, None)
        if batch is None:
            return None
        images, labels = batch
        with torch.cuda.stream(self.stream):
            images = placed_images(images, self.device, self.channels_last, non_blocking=True)
            return images, labels.to(self.device, non_blocking=True)

    def __iter__(self) -> DevicePrefetcher:
        return self

    def __next__(self) -> tuple[torch.Tensor, torch.Tensor]:
        if self.pending is None:
            raise StopIteration
        torch.cuda.current_stream(self.device).wait_stream(self.stream)
        images, labels = self.pending
        images.record_stream(torch.cuda.current_stream(self.device))
        labels.record_stream(torch.cuda.current_stream(self.device))
        self.pending = self._start_copy()
        return images, labels


@dataclass(frozen=True)
class Loaders:
    """One process's DataLoaders: training through `sampler` (epoch set before each), and its
    share of each held-out split."""

    sampler: EpochBatchKeys
    train: torch.utils.data.DataLoader
    held_out: dict[str, torch.utils.data.DataLoader]


def build_loaders(dataset: DatasetDescription, config: RunConfig, placement: Placement, shard: Shard) -> Loaders:
    """Worker pools decoding with PIL: persistent for training and validation (used every epoch),
    started anew for the test split (read once)."""
    workers = loader_workers(config.workers, placement.world_size)
    augmentation = Augmentation.for_input(config.input_size, dataset.bit_depth)
    pin = config.device_kind.on_gpu
    sampler = EpochBatchKeys(len(dataset.train), config.global_batch, shard, config.seed)
    train = torch.utils.data.DataLoader(
        TrainItems(dataset.train, augmentation, config.seed, pixels=True),
        batch_sampler=sampler,
        num_workers=workers,
        pin_memory=pin,
        persistent_workers=workers > 0,
    )
    held_out = {
        name: torch.utils.data.DataLoader(
            EvalItems(
                dataset.split(name),
                augmentation,
                validation_indices(len(dataset.split(name)), placement.rank, placement.world_size),
                pixels=True,
            ),
            batch_size=config.batch_per_device,
            num_workers=workers,
            pin_memory=pin,
            persistent_workers=workers > 0 and name == "val",
        )
        for name in HELD_OUT
    }
    return Loaders(sampler, train, held_out)
