"""Chainer's native loader over the shared datasets: `chainer.iterators.MultiprocessIterator` over
keys that ChainerMN's `scatter_dataset` hands each process.

Training: rank 0 lays out every rank's (epoch, index) keys of an epoch, rank 0's first
(`sampling.rank_major_keys`), and `scatter_dataset` cuts that list into equal contiguous parts,
so process r holds exactly its shared shard of every global batch of the epoch, in order; the
iterator's worker processes read them through `items.TrainItems` (the shared decode, crop, flip
and normalisation) one batch per step, without shuffling. Held-out splits are scattered the
same way without forcing equal parts, so every image is scored once. `concat_examples`, Chainer's
own batch assembly, stacks the items.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from mgbench.core.config import RunConfig
from mgbench.core.errors import UsageError
from mgbench.datasets.augment import Augmentation
from mgbench.datasets.description import DatasetDescription
from mgbench.datasets.items import EvalItems, TrainItems
from mgbench.datasets.sampling import rank_major_keys
from mgbench.frameworks.chainer.imports import chainer, chainermn
from mgbench.training.loaders import loader_workers


class Keyed:
    """`items` read through this process's scattered keys (a Chainer dataset: `len`, `[i]`)."""

    def __init__(self, items: Any, keys: Any):
        self.items, self.keys = items, keys

    def __len__(self) -> int:
        return len(self.keys)

    def __getitem__(self, position: int) -> tuple[np.ndarray, np.ndarray]:
        return self.items[self.keys[position]]


class ChainerLoader:
    """One process's MultiprocessIterators: an epoch of its training shard, or its share of a held-out split."""

    def __init__(self, dataset: DatasetDescription, config: RunConfig, comm: Any):
        self.workers = loader_workers(config.job.workers, comm.size)
        if self.workers < 1:
            raise UsageError("chainer's MultiprocessIterator decodes in worker processes: give --workers 1 or more")
        self.dataset, self.config, self.comm = dataset, config, comm
        self.augmentation = Augmentation.for_input(config.job.input_size, dataset.bit_depth)
        self.train = TrainItems(dataset.train, self.augmentation, config.job.seed, pixels=False)

    def steps_per_epoch(self) -> int:
        return len(self.dataset.train) // self.config.global_batch

    def epoch(self, epoch: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """This process's shard of every global batch of `epoch`, as host arrays."""
        keys = None
        if self.comm.rank == 0:
            size, batch = len(self.dataset.train), self.config.global_batch
            keys = rank_major_keys(size, batch, self.comm.size, epoch, self.config.job.seed)
        mine = chainermn.scatter_dataset(keys, self.comm)
        return self._batches(Keyed(self.train, mine), self.config.job.batch_per_device)

    def held_out(self, split: str) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """This process's part of the whole `split` (parts may differ by one image)."""
        images = self.dataset.split(split)
        indices = list(range(len(images))) if self.comm.rank == 0 else None
        mine = chainermn.scatter_dataset(indices, self.comm, force_equal_length=False)
        items = EvalItems(images, self.augmentation, list(mine), pixels=False)
        return self._batches(items, self.config.job.batch_per_device)

    def _batches(self, items: Any, batch_size: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        iterator = chainer.iterators.MultiprocessIterator(
            items, batch_size, repeat=False, shuffle=False, n_processes=self.workers
        )
        try:
            for batch in iterator:
                yield chainer.dataset.concat_examples(batch)
        finally:
            iterator.finalize()
