"""Gluon's native loader over the shared datasets: `mxnet.gluon.data.DataLoader`.

One process drives every device, so the loader reads whole global batches: its worker processes
(a pool kept for the run, batches stacked in shared memory by Gluon's own batchify) read
`items.TrainItems` in the order of the shared epoch sampler over the whole global batch
(`sampling.EpochBatchKeys` on `Shard(0, G)`). `split_and_load` then gives device i samples
[i*B, (i+1)*B) of each: `Shard.of_rank(i, N, G)`, the shard process i reads in the
one-process-per-device frameworks. Items are the shared host-normalised float32 images.
"""

from __future__ import annotations

from dataclasses import dataclass

from mxnet import gluon

from mgbench.core.config import RunConfig
from mgbench.datasets.augment import Augmentation
from mgbench.datasets.description import HELD_OUT, DatasetDescription
from mgbench.datasets.items import EvalItems, TrainItems
from mgbench.datasets.sampling import EpochBatchKeys, SampledLoader
from mgbench.datasets.synthetic import Shard
from mgbench.training.loaders import loader_workers


@dataclass(frozen=True)
class Loaders:
    """Training through the shared epoch sampler (`SampledLoader`), and each held-out split whole."""

    train: SampledLoader
    held_out: dict[str, gluon.data.DataLoader]


def build_loaders(dataset: DatasetDescription, config: RunConfig) -> Loaders:
    """Worker pools (`--workers`, default every core: one process feeds every device), made once."""
    workers = loader_workers(config.job.workers, 1)
    augmentation = Augmentation.for_input(config.job.input_size, dataset.bit_depth)
    sampler = EpochBatchKeys(len(dataset.train), config.global_batch, Shard(0, config.global_batch), config.job.seed)
    train = gluon.data.DataLoader(
        TrainItems(dataset.train, augmentation, config.job.seed, pixels=False),
        batch_sampler=sampler,
        num_workers=workers,
    )
    held_out = {
        name: gluon.data.DataLoader(
            EvalItems(dataset.split(name), augmentation, list(range(len(dataset.split(name)))), pixels=False),
            batch_size=config.global_batch,
            last_batch="keep",
            num_workers=workers,
        )
        for name in HELD_OUT
    }
    return Loaders(SampledLoader(sampler, train), held_out)
