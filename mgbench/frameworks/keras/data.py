"""Real data for the Keras family: what every Keras adapter's loader reads, and Keras' own loader.

Which samples a process reads (the epoch's permutation and its shard of each global batch,
`mgbench.datasets.sampling`) and the work on each sample (decode, random crop, flip:
`Augmentation.train_pixels`; centre crop for evaluation) are the shared `datasets/` layer's, so
every framework does identical work on identical samples. What is Keras' here is the loading
mechanics: `keras.utils.PyDataset` with `workers` and `use_multiprocessing`, run by the ordered
enqueuer that `fit` runs it through (keras-jax, keras-torch). Its worker processes hand each
batch's pixels (or files) over through a file in shared memory rather than pickled through the
enqueuer's pipe (`handoff.py`). keras-tf and tensorflow build a tf.data pipeline over the same
sample keys instead (`keras_tf/data.py`).

Loaders hand out uint8 NHWC pixels (a quarter of float32's bytes through the worker queues and
the bus); `normalised` turns them into the model's float input where they land, computing what
`augment.normalise` computes on the host. With `--decode gpu` on a JPEG dataset the same samples
travel undecoded instead (`FileBytes`: each file's bytes, the window the augmentation drew from
its header and the target, `datasets/encoded.py`), for the adapter to decode and crop on its
devices. Evaluation logits from every device or process end in `split_metrics`, the one place
the Keras adapters score a split.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property

import keras
import numpy as np
from keras.src.trainers.data_adapters.py_dataset_adapter import PyDatasetAdapter
from scipy.special import expit, softmax

from mgbench.core.config import RunConfig
from mgbench.core.inputs import TokenInput
from mgbench.core.models import ModelSpec
from mgbench.datasets.augment import IMAGENET_MEAN, IMAGENET_STD, Augmentation
from mgbench.datasets.description import DatasetDescription, Split
from mgbench.datasets.encoded import (
    EncodedArrays,
    EncodedEvalItems,
    EncodedItem,
    EncodedTrainItems,
    collated,
    decode_site,
)
from mgbench.datasets.items import EvalItems, TrainItems
from mgbench.datasets.resolve import task_for
from mgbench.datasets.sampling import epoch_batches, validation_indices
from mgbench.datasets.synthetic import Shard, held_out_batch, synthetic_pool
from mgbench.datasets.tokens import TokenBatch, TokenBatches, TokenDataset, held_out_tokens, synthetic_token_pool
from mgbench.frameworks.keras import models as keras_models
from mgbench.frameworks.keras.handoff import HandOff, handed
from mgbench.measure.metrics import split_metrics

HostBatch = tuple[np.ndarray, np.ndarray]
"""uint8 NHWC pixels and their targets."""
SyntheticBatch = tuple[np.ndarray, np.ndarray]
"""(inputs, targets): float32 images in Keras' data format and their labels, or int32 tokens and
the tokens that follow each (`datasets.tokens`)."""
LoadedBatch = HostBatch | EncodedArrays
"""What a loader hands its adapter: pixels or the encoded files, the targets last in either."""
PyDatasetItem = tuple
"""(inputs, targets): what a PyDataset's item may be (Keras' adapter takes at most three parts)."""


def normalised(pixels, channels_last: bool):
    """uint8 NHWC pixels as the model's float32 input (NCHW for channels_first), in backend ops so
    it runs where the pixels are: `augment.normalise`'s arithmetic, in the same order."""
    scaled = keras.ops.cast(pixels, "float32") / 255.0
    images = (scaled - IMAGENET_MEAN) / IMAGENET_STD
    return images if channels_last else keras.ops.transpose(images, (0, 3, 1, 2))


def sample_keys(
    size: int, global_batch: int, shard: Shard, seed: int, epochs: Iterable[int]
) -> Iterator[tuple[int, int]]:
    """(epoch, index) of every sample of `shard` of each global batch of `epochs`, in order: the
    keys a loader turns into pixels (`Augmentation.train_pixels` draws from them)."""
    for epoch in epochs:
        for batch in epoch_batches(size, global_batch, shard, epoch, seed):
            yield from ((epoch, index) for index in batch)


@dataclass(frozen=True)
class HostPixels:
    """The workers decode, crop and flip (Pillow): a batch is uint8 NHWC pixels and targets, the
    pixels handed over through a file in shared memory (`handoff.py`)."""

    def train_items(self, split: Split, augmentation: Augmentation, seed: int) -> TrainItems:
        return TrainItems(split, augmentation, seed, pixels=True)

    def eval_items(self, split: Split, augmentation: Augmentation, indices: list[int]) -> EvalItems:
        return EvalItems(split, augmentation, indices, pixels=True)

    def batch(self, items: list[tuple[np.ndarray, np.ndarray]], handoff: HandOff | None) -> PyDatasetItem:
        pixels, targets = zip(*items)
        images = np.stack(pixels)
        return handed(images, handoff), np.stack(targets)

    def received(self, batch: PyDatasetItem) -> HostBatch:
        """The batch as the enqueuer returned it, its pixels a plain array."""
        images, targets = batch
        return np.asarray(images), targets


@dataclass(frozen=True)
class FileBytes:
    """The workers read each JPEG's bytes and draw its window from the header; the adapter decodes
    and crops them on its devices (`--decode gpu`). The files' bytes are handed over through a file
    in shared memory as pixels are: through the enqueuer's pipe, a batch's files (a few MB) were read
    64 KB at a time by a thread that takes the GIL for every read, and beside the threads that
    decode and place batches, each read waited its turn for the GIL and batches arrived late."""

    def train_items(self, split: Split, augmentation: Augmentation, seed: int) -> EncodedTrainItems:
        return EncodedTrainItems(split, augmentation, seed)

    def eval_items(self, split: Split, augmentation: Augmentation, indices: list[int]) -> EncodedEvalItems:
        return EncodedEvalItems(split, augmentation, indices)

    def batch(self, items: list[EncodedItem], handoff: HandOff | None) -> PyDatasetItem:
        data, lengths, windows, targets = collated(items)
        return (handed(data, handoff), lengths, windows), targets

    def received(self, batch: PyDatasetItem) -> EncodedArrays:
        """The batch as `collated` gives it, its files' bytes a plain array."""
        (data, lengths, windows), targets = batch
        return np.asarray(data), lengths, windows, targets


@dataclass(frozen=True)
class TokenWindows:
    """The workers read a token stream's windows: a batch is (inputs, targets) int32, a few hundred
    KB at most, which the enqueuer's pipe carries as they are."""

    def received(self, batch: PyDatasetItem) -> TokenBatch:
        inputs, targets = batch
        return np.asarray(inputs), np.asarray(targets)


Loading = HostPixels | FileBytes | TokenWindows
"""What a loader's workers hand over: decoded pixels, the files for the devices to decode, or
token windows."""


class Batches(keras.utils.PyDataset):
    """A PyDataset of batches of `loading`'s items, run by `workers` processes (a thread without
    them), which hand them over through `handoff` (shared memory) when they are processes."""

    def __init__(self, loading: Loading, workers: int):
        super().__init__(workers=max(1, workers), use_multiprocessing=workers > 0, max_queue_size=2 * max(1, workers))
        self.loading = loading
        self.handoff: HandOff | None = None


class TrainBatches(Batches):
    """Item b: this shard of global batch b of the epoch, as `loading` hands its samples over.

    With `epoch` set, the items are that epoch's batches; with `epoch=None` the dataset is
    endless (item b is batch b % steps of epoch b // steps), so a run timed by steps reads one
    stream through the epochs and its workers never restart."""

    def __init__(
        self, split: Split, augmentation: Augmentation, config: RunConfig, shard: Shard, loading: Loading, workers: int
    ):
        super().__init__(loading, workers)
        self.split, self.shard = split, shard
        self.items = loading.train_items(split, augmentation, config.job.seed)
        self.global_batch, self.seed = config.global_batch, config.job.seed
        self.steps = len(split) // config.global_batch
        self.epoch: int | None = None
        self._orders: dict[int, list[list[int]]] = {}

    @property
    def num_batches(self) -> int | None:
        return None if self.epoch is None else self.steps

    def indices(self, epoch: int, batch: int) -> list[int]:
        """This shard's images of global batch `batch` of `epoch`."""
        if epoch not in self._orders:
            self._orders = {epoch: epoch_batches(len(self.split), self.global_batch, self.shard, epoch, self.seed)}
        return self._orders[epoch][batch]

    def __getitem__(self, item: int) -> PyDatasetItem:
        epoch, batch = (self.epoch, item) if self.epoch is not None else divmod(item, self.steps)
        return self.loading.batch([self.items[(epoch, i)] for i in self.indices(epoch, batch)], self.handoff)


class EvalBatches(Batches):
    """Item b: batch b of the given images of a split, centre-cropped, as `loading` hands them over."""

    def __init__(
        self, split: Split, augmentation: Augmentation, indices: list[int], size: int, loading: Loading, workers: int
    ):
        super().__init__(loading, workers)
        self.items, self.count, self.size = loading.eval_items(split, augmentation, indices), len(indices), size

    @property
    def num_batches(self) -> int:
        return -(-self.count // self.size)

    def __getitem__(self, item: int) -> PyDatasetItem:
        positions = range(item * self.size, min((item + 1) * self.size, self.count))
        return self.loading.batch([self.items[position] for position in positions], self.handoff)


class TokenTrainBatches(Batches):
    """Item b: this shard of the b-th global batch of `epoch`'s windows of the stream's training split
    (global batch `epoch * steps + b`, as `tokens.TokenBatchIndices` numbers them), drawn by
    `tokens.TokenBatches`; with `epoch=None`, of global batch b, endless.

    The stream is mapped in the process that reads it (`windows`): a worker process is handed the
    dataset's description, never a copy of its tokens."""

    def __init__(self, dataset: TokenDataset, config: RunConfig, shard: Shard, workers: int, epoch: int | None):
        super().__init__(TokenWindows(), workers)
        self.dataset, self.shard, self.epoch = dataset, shard, epoch
        self.seq_len, self.seed = config.job.input_size, config.job.seed
        self.steps = dataset.steps_per_epoch(config.global_batch, self.seq_len)

    @property
    def num_batches(self) -> int | None:
        return None if self.epoch is None else self.steps

    @cached_property
    def windows(self) -> TokenBatches:
        return TokenBatches(self.dataset.stream("train"), self.seq_len, self.shard, self.seed)

    def __getitem__(self, item: int) -> PyDatasetItem:
        first = 0 if self.epoch is None else self.epoch * self.steps
        return self.windows[first + item]


def clean_worker_start() -> None:
    """Worker processes started from a forkserver that imported only this module, not forked
    from the training process.

    Keras' enqueuer starts its pool with multiprocessing's default method, fork on Linux. The
    training process runs threads (JAX's runtime, torch's and gloo's pools, the enqueuer's own
    thread): a fork can copy a lock another thread holds, the worker waits on it forever and so
    does the enqueuer (JAX warns of exactly this deadlock). A forkserver's children start from a
    process with one thread."""
    if multiprocessing.get_start_method(allow_none=True) != "forkserver":
        multiprocessing.set_forkserver_preload([__name__])
        multiprocessing.set_start_method("forkserver", force=True)


def enqueued(dataset: Batches) -> Iterator[LoadedBatch]:
    """The dataset's batches in order through Keras' own data adapter (the ordered enqueuer with
    its worker pool that `fit` runs a PyDataset through), stopped when the iterator is; worker
    processes hand batches over through shared memory (`handoff`)."""
    if dataset.use_multiprocessing:
        clean_worker_start()
        dataset.handoff = HandOff()
    adapter = PyDatasetAdapter(dataset, shuffle=False)
    adapter.on_epoch_begin()
    try:
        for batch in adapter.get_numpy_iterator():
            yield dataset.loading.received(batch)
    finally:
        adapter.on_epoch_end()
        if dataset.handoff:
            dataset.handoff.close()


class RealData:
    """One process's view of a real dataset under a Keras adapter: its training batches per
    epoch or endless, its share of an evaluation split, and the split's metrics. `site` says
    where the images are decoded (`encoded.decode_site`), and so what the batches hold: pixels
    (`HostPixels`) or the files for the adapter's devices to decode (`FileBytes`)."""

    def __init__(self, dataset: DatasetDescription, config: RunConfig, workers: int):
        self.dataset, self.config, self.workers = dataset, config, workers
        self.augmentation = Augmentation.for_input(config.job.input_size, dataset.bit_depth)
        self.loss = keras_models.build_loss(dataset.task_spec(config.job.spec))
        self.site = decode_site(config.job.decode.on_device, dataset.files)
        self.loading: Loading = FileBytes() if self.site.on_device else HostPixels()

    def steps_per_epoch(self) -> int:
        return self.dataset.steps_per_epoch(self.config.global_batch)

    def train(self, shard: Shard, epoch: int | None) -> Iterator[LoadedBatch]:
        """`shard` of every global batch of `epoch` (None: of every epoch from the first on)."""
        batches = TrainBatches(self.dataset.train, self.augmentation, self.config, shard, self.loading, self.workers)
        batches.epoch = epoch
        return enqueued(batches)

    def split(self, name: str) -> Split:
        """An evaluation split (`val` or `test`)."""
        return self.dataset.split(name)

    def evaluation(self, name: str, rank: int, world_size: int, batch: int) -> Iterator[LoadedBatch]:
        """This process's share of split `name` in batches of `batch` (every image once over the processes)."""
        split = self.split(name)
        indices = validation_indices(len(split), rank, world_size)
        return enqueued(EvalBatches(split, self.augmentation, indices, batch, self.loading, self.workers))

    def metrics(self, logits: np.ndarray, targets: np.ndarray) -> dict[str, float]:
        """Loss (Keras' own, over the whole split) and `split_metrics` from every process's logits."""
        logits = logits.astype(np.float32)
        scores = expit(logits) if self.dataset.multi_label else softmax(logits, axis=1)
        loss = float(keras.ops.convert_to_numpy(self.loss(targets, logits)))
        return {"loss": loss, **split_metrics(targets, scores, self.dataset.multi_label)}


class RealTokens:
    """One process's view of a token stream (`--dataset tokens:PATH`) under a Keras adapter: its
    training windows through Keras' loader (`TokenTrainBatches`), per epoch or endless, and the
    fixed windows every validation scores, read in the training process as PyTorch's adapter reads
    them: `TokenDataset.validation_batches` global batches of the split (`test` reads `val`, a
    stream having no other), this process's shard of each."""

    def __init__(self, dataset: TokenDataset, config: RunConfig, workers: int):
        self.dataset, self.config, self.workers = dataset, config, workers
        self.seq_len = config.job.input_size

    def steps_per_epoch(self) -> int:
        return self.dataset.steps_per_epoch(self.config.global_batch, self.seq_len)

    def train(self, shard: Shard, epoch: int | None) -> Iterator[TokenBatch]:
        """`shard` of every global batch of `epoch` (None: of every epoch from the first on)."""
        return enqueued(TokenTrainBatches(self.dataset, self.config, shard, self.workers, epoch))

    def evaluation(self, name: str, shard: Shard) -> Iterator[TokenBatch]:
        """`shard` of each global batch of windows a validation of split `name` scores."""
        windows = TokenBatches(self.dataset.stream(name), self.seq_len, shard, self.config.job.seed)
        return (
            windows[index] for index in range(self.dataset.validation_batches(self.config.global_batch, self.seq_len))
        )


def keras_task(config: RunConfig, workers: int) -> tuple[RealData | RealTokens | None, ModelSpec]:
    """What every Keras adapter sets up before it builds its model: Keras seeded and at the job's
    precision, the job's real data read by `workers` loader workers (images or a token stream;
    None: synthetic data), and the model as the data's task shapes it (`task_for`)."""
    keras.utils.set_random_seed(config.job.seed)
    keras_models.set_precision(config.job.precision)
    dataset, spec = task_for(config.job)
    if isinstance(dataset, TokenDataset):
        return RealTokens(dataset, config, workers), spec
    return (RealData(dataset, config, workers) if dataset else None), spec


def synthetic_pool_of(config: RunConfig, shard: Shard) -> list[SyntheticBatch]:
    """The synthetic batches a process holding `shard` cycles through: a language model's tokens
    (`tokens.synthetic_token_pool`), else images in the job's data format."""
    job = config.job
    if isinstance(job.input, TokenInput):
        return synthetic_token_pool(job.input.vocabulary, job.input_size, shard, job.seed)
    return synthetic_pool(job.spec, job.input_size, shard, job.seed, job.data_format.channels_last)


def held_out_of(config: RunConfig, shard: Shard) -> SyntheticBatch:
    """`shard` of the synthetic batch never trained on, which evaluation scores (seeded apart from
    the pool, as every framework's)."""
    job = config.job
    if isinstance(job.input, TokenInput):
        return held_out_tokens(job.input.vocabulary, job.input_size, shard, job.seed + 1)
    return held_out_batch(job.spec, job.input_size, shard, job.seed + 1, job.data_format.channels_last)


def held_out_windows(config: RunConfig, real: RealTokens | None, split: str, shard: Shard) -> Iterator[TokenBatch]:
    """What a language model's validation of `split` scores: `shard` of the stream's fixed windows
    (`RealTokens.evaluation`), or of the held-out synthetic batch."""
    return real.evaluation(split, shard) if real is not None else iter([held_out_of(config, shard)])
