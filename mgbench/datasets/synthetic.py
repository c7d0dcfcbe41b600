"""Synthetic in-memory images and labels of the model's shape, generated once per process.

Every sample is drawn from its own seeded generator (seed, batch index, sample index), so a
process holding samples 64..127 of a global batch holds exactly what a single process holding
the whole batch holds at those positions. That is what lets the equivalence tests compare one
device on batch B with N devices on B/N each.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import cycle
from typing import Any

import numpy as np

from mgbench.core.models import ModelSpec

POOL_BATCHES = 2
"""Distinct batches cycled through; more would only cost memory for random data."""

HELD_OUT_BATCH = 1_000_003
"""Batch index used for evaluation, far from any training index."""

MULTI_LABEL_RATE = 0.1


@dataclass(frozen=True)
class Shard:
    """Samples [start, stop) of each global batch belong to this process."""

    start: int
    stop: int

    @property
    def size(self) -> int:
        return self.stop - self.start

    @classmethod
    def of_rank(cls, rank: int, world_size: int, global_batch: int) -> Shard:
        if global_batch % world_size:
            raise ValueError(f"global batch {global_batch} does not split over {world_size} processes")
        per_rank = global_batch // world_size
        return cls(rank * per_rank, (rank + 1) * per_rank)


def synthetic_batch(
    spec: ModelSpec, image_size: int, batch_index: int, shard: Shard, seed: int, channels_last: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Images (float32, NCHW or NHWC) and labels for one shard of one global batch.

    The pixels are drawn in NCHW and transposed for NHWC, so every framework sees the same
    image whatever its layout (the same-start check compares their first losses).

    Labels are int64 class indices for softmax models and float32 multi-hot rows for
    sigmoid (CheXNet-style) models.
    """
    shape = (3, image_size, image_size)
    images = np.empty((shard.size, *shape), dtype=np.float32)
    if spec.objective.multi_label:
        labels = np.empty((shard.size, spec.num_classes), dtype=np.float32)
    else:
        labels = np.empty((shard.size,), dtype=np.int64)
    for row, sample in enumerate(range(shard.start, shard.stop)):
        rng = np.random.default_rng([seed, batch_index, sample])
        images[row] = rng.standard_normal(shape, dtype=np.float32)
        if spec.objective.multi_label:
            labels[row] = rng.random(spec.num_classes) < MULTI_LABEL_RATE
        else:
            labels[row] = rng.integers(0, spec.num_classes)
    return (np.ascontiguousarray(images.transpose(0, 2, 3, 1)) if channels_last else images), labels


def synthetic_pool(
    spec: ModelSpec, image_size: int, shard: Shard, seed: int, channels_last: bool = False
) -> list[tuple[np.ndarray, np.ndarray]]:
    """The batches a process cycles through during training."""
    return [synthetic_batch(spec, image_size, k, shard, seed, channels_last) for k in range(POOL_BATCHES)]


def held_out_batch(
    spec: ModelSpec, image_size: int, shard: Shard, seed: int, channels_last: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """A batch never trained on, for the evaluation pass."""
    return synthetic_batch(spec, image_size, HELD_OUT_BATCH, shard, seed, channels_last)


def placed_batches(pool: list[Any], place: Callable[[Any], Any], resident: bool) -> Iterator[Any]:
    """Endless training batches from a pool, put where the framework computes by `place`.

    Resident: placed once and cycled (`--data-on-device`, the compute-only ceiling, and CPU
    devices, where placing is free). Otherwise placed every step, so each step pays the
    host-to-device copy as it would with real data.
    """
    if resident:
        return cycle([place(batch) for batch in pool])
    return (place(batch) for batch in cycle(pool))
