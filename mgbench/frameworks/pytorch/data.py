"""PyTorch's native loader over the shared datasets: `torch.utils.data.DataLoader`, and the input
staging of the strategies.

The DataLoader's worker processes (persistent, pinned memory on CUDA) read `items.TrainItems`
through the shared epoch sampler (`sampling.EpochBatchKeys`), so they decode, crop, flip and
label exactly what every other framework's loader does; items travel as uint8 pixels and are
normalised on the device (`placed_images`). With `--decode gpu` on a JPEG dataset the workers
read file bytes and windows instead (`encoded.EncodedTrainItems`) and the training process
decodes and crops them on its device (`device_decode.py`); `decoding_for` picks. Staged input
(`ddp`, `dp`, `dp-loss`, Horovod's `hvd`) places batch k+1 on a side stream during step k (the
placement's `staged`: `DevicePrefetcher` for copies); unstaged input (`ddp-unstaged`) places
each batch when the step takes it.

A language model is fed token batches instead (`TokenFeed`): synthetic ones from a pool, or with
`--dataset tokens:PATH` windows of the prepared stream read by a DataLoader over the shared
`tokens.TokenBatches` and `TokenBatchIndices` (`build_token_loaders`), copied to the device and
staged as pixels are. The stream was tokenised by `mgbench prepare tokens`: nothing is tokenised here.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from mgbench.core.config import RunConfig
from mgbench.core.job import Job
from mgbench.core.models import ModelSpec
from mgbench.datasets.augment import Augmentation
from mgbench.datasets.description import HELD_OUT, DatasetDescription, Split
from mgbench.datasets.encoded import DecodeSite, decode_site
from mgbench.datasets.images import host_decoder
from mgbench.datasets.items import EvalItems, TrainItems
from mgbench.datasets.sampling import EpochBatchKeys, SampledLoader, validation_indices
from mgbench.datasets.synthetic import Shard, held_out_batch, synthetic_pool
from mgbench.datasets.tokens import TokenBatches, TokenBatchIndices, TokenDataset, held_out_tokens, synthetic_token_pool
from mgbench.frameworks.pytorch.device_decode import DecodedOnDevice, DeviceDecoding
from mgbench.frameworks.pytorch.normalise import normalised_pixels
from mgbench.training.loaders import loader_workers
from mgbench.training.protocol import Placement


def placed_images(
    images: torch.Tensor, device: torch.device, channels_last: bool, non_blocking: bool = False
) -> torch.Tensor:
    """A host batch on `device`, in the model's memory format.

    uint8 batches are the real-data loaders' NHWC pixels (`Augmentation.*_pixels`): they travel
    as bytes, a quarter of float32's, and are normalised here as `augment.normalise` does on the host.
    """
    images = images.to(device, non_blocking=non_blocking)
    if images.dtype == torch.uint8:
        return normalised_pixels(images.permute(0, 3, 1, 2), channels_last)
    return images.contiguous(memory_format=torch.channels_last if channels_last else torch.contiguous_format)


@dataclass(frozen=True)
class PlacedPixels:
    """Places host batches of pixels (a loader's uint8 NHWC, a synthetic pool's float32) and their
    labels on `device`: how a batch that the host decoded reaches the step."""

    device: torch.device
    channels_last: bool

    def __call__(
        self, batch: tuple[torch.Tensor, torch.Tensor], non_blocking: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor]:
        images, labels = batch
        return (
            placed_images(images, self.device, self.channels_last, non_blocking),
            labels.to(self.device, non_blocking=non_blocking),
        )

    def staged(self, host_batches: Iterator[tuple[torch.Tensor, torch.Tensor]]) -> DevicePrefetcher:
        """The batches copied one step ahead on a side stream, from pinned memory."""
        return DevicePrefetcher(host_batches, self)


@dataclass(frozen=True)
class PlacedTokens:
    """Places host token batches (inputs and targets, int32: the embedding and the loss take them
    as they are) on `device`, each a plain copy."""

    device: torch.device

    def __call__(
        self, batch: tuple[torch.Tensor, torch.Tensor], non_blocking: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor]:
        inputs, targets = batch
        return inputs.to(self.device, non_blocking=non_blocking), targets.to(self.device, non_blocking=non_blocking)

    def staged(self, host_batches: Iterator[tuple[torch.Tensor, torch.Tensor]]) -> DevicePrefetcher:
        """The batches copied one step ahead on a side stream, from pinned memory."""
        return DevicePrefetcher(host_batches, self)


class DevicePrefetcher:
    """Copies batch k+1 from pinned host memory to the device on a side stream during step k
    (`PlacedPixels`, `PlacedTokens`).

    Takes any iterator of host batches (a cycled synthetic pool, or a DataLoader with
    `pin_memory`) and ends when it ends.
    """

    def __init__(self, host_batches: Iterator[Any], place: PlacedPixels | PlacedTokens):
        self.host_batches = host_batches
        self.place = place
        self.device = place.device
        self.stream = torch.cuda.Stream(self.device)
        self.pending = self._start_copy()

    def _start_copy(self) -> tuple[torch.Tensor, torch.Tensor] | None:
        batch = next(self.host_batches, None)
        if batch is None:
            return None
        with torch.cuda.stream(self.stream):
            return self.place(batch, True)

    def __iter__(self) -> DevicePrefetcher:
        return self

    def close(self) -> None:
        """Lets go of the host batches' iterator (a loader's: its workers can then be ended) and
        of the batch copied ahead; the prefetcher ends."""
        self.host_batches, self.pending = iter(()), None

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
class HostDecoding:
    """The loader's items, collation and placement where the workers decode (Pillow): uint8 pixels
    through the queues, normalised on the device. `note` says why a `--decode gpu` job decodes here."""

    place: PlacedPixels
    note: str = ""

    collate = None
    """torch's default: the pixels stack into one batch."""

    @property
    def decoder(self) -> str:
        return host_decoder() + self.note

    def train_items(self, split: Split, augmentation: Augmentation, seed: int) -> TrainItems:
        return TrainItems(split, augmentation, seed, pixels=True)

    def eval_items(self, split: Split, augmentation: Augmentation, indices: list[int]) -> EvalItems:
        return EvalItems(split, augmentation, indices, pixels=True)


def decoding_for(
    dataset: DatasetDescription, config: RunConfig, device: torch.device, channels_last: bool
) -> HostDecoding | DeviceDecoding:
    """On the device with `--decode gpu` where every image is a JPEG, else in the workers."""
    site = decode_site(config.job.decode.on_device, dataset.files)
    return decoding_at(site, config.job.input_size, device, channels_last, config.job.decode_host_share)


def decoding_at(
    site: DecodeSite, crop: int, device: torch.device, channels_last: bool, host_share: float = 0.0
) -> HostDecoding | DeviceDecoding:
    """The decoding `site` says (`encoded.decode_site`), for a loader that has decided it already;
    on the device, the workers decode `host_share` of each batch."""
    if site.on_device:
        return DeviceDecoding(DecodedOnDevice(device, crop, channels_last), host_share)
    return HostDecoding(PlacedPixels(device, channels_last), site.note)


@dataclass(frozen=True)
class Loaders:
    """One process's DataLoaders: training through the shared epoch sampler (`SampledLoader`),
    and its share of each held-out split; `decoding` says where their images are decoded and
    places their batches."""

    train: SampledLoader
    held_out: dict[str, torch.utils.data.DataLoader]
    decoding: HostDecoding | DeviceDecoding

    @property
    def place(self) -> PlacedPixels | DecodedOnDevice:
        """What puts a batch of these loaders on the device: its pixels copied, or its files decoded there."""
        return self.decoding.place

    @property
    def decoder(self) -> str:
        """What decodes the images, and where (`ModelInfo.decoder`)."""
        return self.decoding.decoder


def build_loaders(
    dataset: DatasetDescription,
    config: RunConfig,
    placement: Placement,
    shard: Shard,
    decoding: HostDecoding | DeviceDecoding,
) -> Loaders:
    """Worker pools reading `decoding`'s items: for training and validation persistent where the
    run reads them every epoch (`--epochs`), started anew for the test split (read once).

    A run timed in `--steps` makes each iterator once (one endless pass over the training split,
    one validation), so its pools are not kept: torch gives a persistent pinned loader an exit
    hook that joins its workers one after another with a timeout, which a run that fails, and so
    never reaches the adapter's `close`, would wait through at its exit."""
    workers = loader_workers(config.job.workers, placement.world_size)
    persistent = workers > 0 and bool(config.job.epochs)
    augmentation = Augmentation.for_input(config.job.input_size, dataset.bit_depth)
    pin = config.job.device_kind.on_gpu
    sampler = EpochBatchKeys(len(dataset.train), config.global_batch, shard, config.job.seed)
    train = torch.utils.data.DataLoader(
        decoding.train_items(dataset.train, augmentation, config.job.seed),
        batch_sampler=sampler,
        num_workers=workers,
        collate_fn=decoding.collate,
        pin_memory=pin,
        persistent_workers=persistent,
    )
    held_out = {
        name: torch.utils.data.DataLoader(
            decoding.eval_items(
                dataset.split(name),
                augmentation,
                validation_indices(len(dataset.split(name)), placement.rank, placement.world_size),
            ),
            batch_size=config.job.batch_per_device,
            num_workers=workers,
            collate_fn=decoding.collate,
            pin_memory=pin,
            persistent_workers=persistent and name == "val",
        )
        for name in HELD_OUT
    }
    return Loaders(SampledLoader(sampler, train), held_out, decoding)


@dataclass(frozen=True)
class TokenLoaders:
    """One process's DataLoaders of a token stream (`--dataset tokens:PATH`): training through
    the epoch's global batch indices (`SampledLoader` over `tokens.TokenBatchIndices`), and for
    each held-out split the fixed windows every validation scores
    (`TokenDataset.validation_batches` global batches, this process's shard of each; `test` reads
    the `val` split, a stream having no other); `place` copies their batches to the device."""

    train: SampledLoader
    held_out: dict[str, torch.utils.data.DataLoader]
    place: PlacedTokens
    decoder = None
    """Nothing decodes a stream: its tokens are read as they were written."""


def build_token_loaders(
    dataset: TokenDataset, config: RunConfig, placement: Placement, shard: Shard, place: PlacedTokens
) -> TokenLoaders:
    """Each loader's item is one whole batch, this process's shard of the global batch of its
    index (`tokens.TokenBatches`, the key the sampler gives: no collation). Training windows are
    read by `loader_workers` workers, persistent with `--epochs` as the image loaders'; the
    held-out ones in the training process (a validation reads a few memory-mapped windows)."""
    seq_len, seed, pin = config.job.input_size, config.job.seed, config.job.device_kind.on_gpu
    workers = loader_workers(config.job.workers, placement.world_size)
    indices = TokenBatchIndices(dataset.steps_per_epoch(config.global_batch, seq_len))
    train = torch.utils.data.DataLoader(
        TokenBatches(dataset.stream("train"), seq_len, shard, seed),
        sampler=indices,
        batch_size=None,
        num_workers=workers,
        pin_memory=pin,
        persistent_workers=workers > 0 and bool(config.job.epochs),
    )
    validation = range(dataset.validation_batches(config.global_batch, seq_len))
    held_out = {
        name: torch.utils.data.DataLoader(
            TokenBatches(dataset.stream(name), seq_len, shard, seed),
            sampler=validation,
            batch_size=None,
            pin_memory=pin,
        )
        for name in HELD_OUT
    }
    return TokenLoaders(SampledLoader(indices, train), held_out, place)


HostBatch = tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class PixelFeed:
    """What an image model's steps are fed: synthetic images (`synthetic.py`) or a real dataset's
    through `build_loaders`, and how a batch reaches the device."""

    place: PlacedPixels

    def pool(self, job: Job, shard: Shard) -> list[HostBatch]:
        return synthetic_pool(job.spec, job.input_size, shard, job.seed)

    def held_out(self, job: Job, shard: Shard) -> HostBatch:
        return held_out_batch(job.spec, job.input_size, shard, job.seed + 1)

    def loaders(self, dataset: DatasetDescription, config: RunConfig, placement: Placement, shard: Shard) -> Loaders:
        """The dataset's loaders, its images decoded where `decoding_for` decides."""
        decoding = decoding_for(dataset, config, self.place.device, self.place.channels_last)
        return build_loaders(dataset, config, placement, shard, decoding)


@dataclass(frozen=True)
class TokenFeed:
    """What a language model's steps are fed: synthetic tokens uniform over its `vocabulary`
    (`tokens.synthetic_token_pool`) or a token stream's windows through `build_token_loaders`,
    and how a batch reaches the device."""

    place: PlacedTokens
    vocabulary: int

    def pool(self, job: Job, shard: Shard) -> list[HostBatch]:
        return synthetic_token_pool(self.vocabulary, job.input_size, shard, job.seed)

    def held_out(self, job: Job, shard: Shard) -> HostBatch:
        return held_out_tokens(self.vocabulary, job.input_size, shard, job.seed + 1)

    def loaders(self, dataset: TokenDataset, config: RunConfig, placement: Placement, shard: Shard) -> TokenLoaders:
        return build_token_loaders(dataset, config, placement, shard, self.place)


def feed_for(spec: ModelSpec, device: torch.device, channels_last: bool) -> PixelFeed | TokenFeed:
    """Token batches for a language model, pixels for the others. (The dataset check before
    launching refused a dataset of the other kind: `input_refusal`.)"""
    if spec.language_model is not None:
        return TokenFeed(PlacedTokens(device), spec.language_model.vocabulary)
    return PixelFeed(PlacedPixels(device, channels_last))
