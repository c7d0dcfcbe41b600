"""Which images each process reads, per epoch: the same global batches in every framework.

Each epoch is a permutation drawn from (seed, epoch); global batch b is positions
[b*G, (b+1)*G) of it and a process takes its `Shard` of that batch, exactly as with the
synthetic data. So N processes together read what one process reads on the same global
batch, which is what makes 1-device and N-device runs comparable epoch by epoch.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from mgbench.datasets.synthetic import Shard


def epoch_batches(size: int, global_batch: int, shard: Shard, epoch: int, seed: int) -> list[list[int]]:
    """Image indices of this shard for every whole global batch of one epoch."""
    order = np.random.default_rng([seed, epoch]).permutation(size)
    return [
        order[b * global_batch + shard.start : b * global_batch + shard.stop].tolist()
        for b in range(size // global_batch)
    ]


def validation_indices(size: int, rank: int, world_size: int) -> list[int]:
    """Every validation image exactly once over all processes (rank r takes r, r+W, ...)."""
    return list(range(rank, size, world_size))


def epoch_keys(
    size: int, global_batch: int, shard: Shard, epochs: Iterable[int], seed: int
) -> Iterator[list[tuple[int, int]]]:
    """`epoch_batches` of each of `epochs` in turn, as the (epoch, index) keys `items.TrainItems` reads."""
    for epoch in epochs:
        for batch in epoch_batches(size, global_batch, shard, epoch, seed):
            yield [(epoch, index) for index in batch]


class EpochBatchKeys:
    """A batch sampler any map-style loader takes (torch's and Gluon's DataLoader): this shard's
    keys of each global batch of `epoch` (`start`, before each epoch), or with `endless` of that
    epoch and every later one in one stream.

    Endless is for runs timed by steps: a new loader iterator per epoch drains the workers'
    queue at every epoch's end, and each restart stalled DenseNet-121 on 4 GPUs for 1.0-1.4 s
    every 31 steps (20,000 PNGs, 512 per global batch).
    """

    def __init__(self, size: int, global_batch: int, shard: Shard, seed: int):
        self.size, self.global_batch, self.shard, self.seed = size, global_batch, shard, seed
        self.epoch = 0
        self.endless = False

    def __len__(self) -> int:
        return self.size // self.global_batch

    def start(self, epoch: int | None) -> None:
        """Draw `epoch`'s batches, that epoch alone; None: every epoch's from the first on, endless."""
        self.epoch, self.endless = (0, True) if epoch is None else (epoch, False)

    def __iter__(self) -> Iterator[list[tuple[int, int]]]:
        epochs = itertools.count(self.epoch) if self.endless else (self.epoch,)
        return epoch_keys(self.size, self.global_batch, self.shard, epochs, self.seed)


class EpochSampler(Protocol):
    """What `SampledLoader` turns: a sampler of one epoch's batches (`len`: the steps in it), set
    to an epoch or to every epoch, endless (`EpochBatchKeys`, `tokens.TokenBatchIndices`)."""

    def __len__(self) -> int: ...

    def start(self, epoch: int | None) -> None: ...


@dataclass(frozen=True)
class SampledLoader:
    """A framework's training loader drawing its batches through `sampler`. The sampler is set
    here before each iterator of the loader starts, so an adapter asks for the batches it trains
    on (`endless`, `epoch`) and never turns the sampler itself."""

    sampler: EpochSampler
    loader: Iterable[Any]

    def __len__(self) -> int:
        """The steps in one epoch."""
        return len(self.sampler)

    def endless(self) -> Iterator[Any]:
        """Every epoch's batches from the first on, in one stream (a run timed in steps)."""
        self.sampler.start(None)
        return iter(self.loader)

    def epoch(self, epoch: int) -> Iterator[Any]:
        """The batches of `epoch` alone (`--epochs`)."""
        self.sampler.start(epoch)
        return iter(self.loader)


def rank_major_keys(size: int, global_batch: int, world_size: int, epoch: int, seed: int) -> list[tuple[int, int]]:
    """Every rank's keys of `epoch`, rank 0's batches first: cut into `world_size` equal
    contiguous parts (as ChainerMN's `scatter_dataset` cuts a dataset), part r is exactly what
    `epoch_keys` gives rank r, batch after batch."""
    return [
        key
        for rank in range(world_size)
        for batch in epoch_keys(size, global_batch, Shard.of_rank(rank, world_size, global_batch), (epoch,), seed)
        for key in batch
    ]
