"""Which images each process reads, per epoch: the same global batches in every framework.

Each epoch is a permutation drawn from (seed, epoch); global batch b is positions
[b*G, (b+1)*G) of it and a process takes its `Shard` of that batch, exactly as with the
synthetic data. So N processes together read what one process reads on the same global
batch, which is what makes 1-device and N-device runs comparable epoch by epoch.
"""

from __future__ import annotations

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
