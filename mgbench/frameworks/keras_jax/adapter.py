"""Keras 3 adapter over JAX, with no TensorFlow anywhere.

For machines where TensorFlow has no GPU build. What the strategies share is here: the model,
the input, evaluation and the profiled window; how each splits the step over the devices and
holds the variables between steps is its object's (`strategies.py`).

Why not `fit` on numpy arrays (far slower than PyTorch DDP, BENCHMARKS.md): with a
distribution set, Keras' iterator copies each batch to the devices synchronously, one step at
a time. Here the batch pool sits in page-locked host memory, and batches are sharded onto the
devices one step ahead (`device_put` is asynchronous, so batch k+1 travels while step k
computes; with `--data-on-device` the pool is sharded once).

Input staging (`StrategySpec.staged`): the strategies are staged (batch k+1 sharded onto the
devices while step k runs); the unstaged twin `jax-shard-map-unstaged` shards each batch from
host arrays when the step takes it.
Real data (`--dataset`) is read by `keras.utils.PyDataset` with worker processes (`data.py`):
uint8 pixels of the global batch, sharded over the devices as the synthetic batches are (device
d holds the shared shard of rank d) and normalised there by one compiled function; staged, the
batches are placed on a thread of their own (`training/prefetch.py`), two ahead of the step. With
`--decode gpu` on a JPEG dataset the loader hands over the files instead, decoded and cropped
on the first device by torchvision, each device's share handed to JAX by DLPack
(`device_decode.py`, which imports torch: only such a run loads it).
"""

from __future__ import annotations

import gzip
import tempfile
from collections.abc import Callable, Iterator
from functools import partial
from itertools import cycle
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import jax
import jaxlib
import keras
import numpy as np

from mgbench.core.config import RunConfig
from mgbench.core.errors import UsageError
from mgbench.core.safe_files import write_file
from mgbench.datasets.encoded import DecodeSite
from mgbench.datasets.synthetic import Shard
from mgbench.frameworks.keras import data
from mgbench.frameworks.keras import models as keras_models
from mgbench.frameworks.keras import weights as keras_weights
from mgbench.frameworks.keras_jax import attention
from mgbench.frameworks.keras_jax.placement import ShardedPixels
from mgbench.frameworks.keras_jax.spec import FRAMEWORK
from mgbench.frameworks.keras_jax.strategies import STRATEGIES, DeviceState
from mgbench.measure.metrics import language_model_metrics
from mgbench.measure.trace_events import STEP_MARK
from mgbench.training.loaders import loader_workers
from mgbench.training.prefetch import Ahead
from mgbench.training.protocol import Adapter, ModelInfo, Placement

if TYPE_CHECKING:
    from mgbench.frameworks.keras_jax.device_decode import DecodedByTorch

DeviceBatch = tuple[jax.Array, jax.Array]
Batch = TypeVar("Batch")
PLACED_AHEAD = 2
"""Real-data batches placed on the devices ahead of the step when staged: one ready for the next
step while the one after it is copied."""


class JaxDataParallelAdapter(Adapter):
    def __init__(self, strategy: str):
        super().__init__(strategy)
        spec = FRAMEWORK.strategy(strategy)
        self.parallel = STRATEGIES[spec.kind]()
        self.staged = spec.staged

    def setup(self, config: RunConfig) -> ModelInfo:
        keras_models.require_backend("keras-jax", "jax")
        self.accept(config)
        platform = "gpu" if config.job.device_kind.on_gpu else "cpu"
        devices = jax.devices(platform)
        if len(devices) < config.devices:
            raise UsageError(f"{config.devices} {platform} devices asked for, JAX sees {len(devices)}")
        devices = devices[: config.devices]
        self._placement = Placement(rank=0, world_size=1, device_names=[str(d.device_kind) for d in devices])
        self.mesh = self.parallel.mesh(devices)
        self.real, self.spec = data.keras_task(config, loader_workers(config.job.workers, 1))
        self.model, digest = keras_weights.started_model(self.spec, config)
        self.model.compile(
            optimizer=keras_models.build_optimizer(config), loss=keras_models.build_loss(self.spec), jit_compile=True
        )
        self.model.optimizer.build(self.model.trainable_variables)
        self.model.make_train_function()
        self.forward = jax.jit(self._inference)
        self.place = self._loader_placement(self.real.site) if isinstance(self.real, data.RealData) else None
        self.parallel.prepare(self.model, self.mesh)
        self.state = self.parallel.initial_state()
        self.learning_rate = config.job.learning_rate
        self._loss: Any = 0.0
        return ModelInfo(
            parameters=keras_models.trainable_parameters(self.model),
            init_digest=digest,
            attention_kernel=attention.attention_kernel(
                self.spec, config.job.input_size, config.job.batch_per_device, devices[0], config.job.precision
            ),
            decoder=self.place.decoder if self.place else None,
        )

    def _loader_placement(self, site: DecodeSite) -> ShardedPixels | DecodedByTorch:
        """How the loader's batches reach the devices: their pixels sharded, or their files decoded
        on the devices (`device_decode.DecodedByTorch`, imported only then: it loads torch), and
        normalised there (`normalise`)."""
        self.normalise = jax.jit(partial(data.normalised, channels_last=self.config.job.data_format.channels_last))
        if not site.on_device:
            return ShardedPixels(self.sharding(), site.note)
        from mgbench.frameworks.keras_jax.device_decode import DecodedByTorch

        return DecodedByTorch(self.sharding(), self.config.job.input_size)

    def held_state(self) -> DeviceState:
        """The variables' current values, by group, wherever this strategy holds them."""
        return self.parallel.held(self.state)

    def _inference(self, trainable: list[jax.Array], non_trainable: list[jax.Array], inputs: jax.Array) -> jax.Array:
        """The model in inference mode as one compiled function (called eagerly, Keras over JAX
        dispatches layer by layer, minutes for DenseNet-121)."""
        return self.model.stateless_call(trainable, non_trainable, inputs, training=False)[0]

    def sharding(self, memory_kind: str = "device") -> jax.sharding.NamedSharding:
        """Split along the batch axis over the devices (the layout DataParallel gives data), in
        the devices' memory or, with `memory_kind="pinned_host"`, page-locked host memory."""
        axis = self.mesh.axis_names[0]
        return jax.sharding.NamedSharding(self.mesh, jax.sharding.PartitionSpec(axis), memory_kind=memory_kind)

    def shard(self, batch: tuple[Any, ...], memory_kind: str = "device") -> DeviceBatch:
        """Each array of `batch` placed as `sharding` says."""
        sharded = self.sharding(memory_kind)
        return tuple(jax.device_put(array, sharded) for array in batch)

    def batches(self) -> Iterator[DeviceBatch]:
        if self.real is not None:
            return self._fed(self.real.train(Shard(0, self.config.global_batch), None))
        pool = data.synthetic_pool_of(self.config, Shard(0, self.config.global_batch))
        if self.config.job.data_on_device:
            return cycle([self.shard(batch) for batch in pool])
        if not self.staged:
            return (self.shard(batch) for batch in cycle(pool))
        # Host-fed like the PyTorch adapter's pinned pool: from numpy (pageable memory) one
        # process copies every device's share through a staging buffer, showing as input wait;
        # from page-locked memory each device's share is one DMA.
        return one_ahead(self.shard(batch) for batch in cycle([self.shard(b, "pinned_host") for b in pool]))

    def _placed(self, batch: data.LoadedBatch) -> DeviceBatch:
        """A loader's batch on the devices: images as uint8 pixels placed there (`place`) and
        normalised there, their targets sharded alike; a token stream's windows sharded as they are."""
        if self.place is None:
            return self.shard(batch)
        (targets,) = self.shard(batch[-1:])
        return self.normalise(self.place.pixels(batch)), targets

    def _fed(self, host: Iterator[data.LoadedBatch]) -> Iterator[DeviceBatch]:
        """Loader batches placed ahead of the step on a thread of their own (staged: a numpy
        batch's `device_put` copies it through a staging buffer, which would otherwise lengthen
        every step), or on the training thread when the step takes them (unstaged)."""
        placed = (self._placed(batch) for batch in host)
        return Ahead(placed, depth=PLACED_AHEAD) if self.staged else placed

    def steps_per_epoch(self) -> int:
        return self.real.steps_per_epoch()

    def epoch_batches(self, epoch: int) -> Iterator[DeviceBatch]:
        return self._fed(self.real.train(Shard(0, self.config.global_batch), epoch))

    def set_learning_rate(self, learning_rate: float) -> None:
        """The optimizer's rate, wherever the strategy holds it."""
        if learning_rate == self.learning_rate:
            return
        self.learning_rate = learning_rate
        self.state = self.parallel.with_rate(self.state, learning_rate)

    def train_step(self, batch: DeviceBatch) -> None:
        inputs, targets = batch
        self._loss, self.state = self.parallel.train(self.state, inputs, targets)

    def synchronize(self) -> None:
        jax.block_until_ready((self._loss, self.state))

    def last_loss(self) -> float:
        return float(self._loss)

    def pending_loss(self) -> Any:
        """The step's loss as the compiled step returned it, still on the devices."""
        return self._loss

    def read_losses(self, pending: list[Any]) -> list[float]:
        """The window's losses in one transfer."""
        return [float(value) for value in jax.device_get(pending)]

    def evaluate(self, split: str = "val") -> dict[str, float]:
        """A language model's loss per token and perplexity (`_language_model_metrics`); an image
        model's loss and AUC over every image of `split` on real data, else its loss on the held-out
        batch."""
        trainable, non_trainable = self.held_state()[:2]
        if self.spec.language_model is not None:
            return self._language_model_metrics(split, trainable, non_trainable)
        if self.real is not None:
            return self._score(split, trainable, non_trainable)
        images, labels = self.shard(data.held_out_of(self.config, Shard(0, self.config.global_batch)))
        loss = keras_models.build_loss(self.spec)(labels, self.forward(trainable, non_trainable, images))
        return {"loss": float(loss)}

    def _language_model_metrics(
        self, split: str, trainable: list[jax.Array], non_trainable: list[jax.Array]
    ) -> dict[str, float]:
        """The mean loss per token over the held-out global batches (a stream's fixed windows of
        `split`, or the held-out synthetic batch: `data.held_out_windows`), each as many tokens,
        and its perplexity."""
        loss = keras_models.build_loss(self.spec)
        windows = data.held_out_windows(self.config, self.real, split, Shard(0, self.config.global_batch))
        losses = [
            float(loss(targets, self.forward(trainable, non_trainable, inputs)))
            for inputs, targets in (self.shard(batch) for batch in windows)
        ]
        return language_model_metrics(float(np.mean(losses)))

    def _score(self, split: str, trainable: list[jax.Array], non_trainable: list[jax.Array]) -> dict[str, float]:
        """Every image of the split through the compiled forward, each batch padded to the global
        batch so it shards evenly and the forward compiles once."""
        size = self.config.global_batch
        logits, targets = [], []
        for batch in self.real.evaluation(split, 0, 1, size):
            labels = batch[-1]
            images = self.normalise(self.place.pixels(batch, padded_to=size))
            logits.append(np.asarray(self.forward(trainable, non_trainable, images))[: len(labels)])
            targets.append(labels)
        return self.real.metrics(np.concatenate(logits), np.concatenate(targets))

    def _memory_stats(self) -> list[dict[str, int]]:
        """Each of the run's GPUs' allocator figures (a CPU device has none: empty)."""
        return [d.memory_stats() or {} for d in jax.devices("gpu")[: self.config.devices]]

    def peak_device_memory_bytes(self) -> int | None:
        return max(s.get("peak_bytes_in_use", 0) for s in self._memory_stats())

    def peak_device_reserved_bytes(self) -> int | None:
        """The BFC allocator's largest pool (`peak_pool_bytes`): what it took from the device, the
        share XLA preallocates (75%) unless told to allocate as needed (`peak_bytes_reserved`
        reads 0 on GPU). None where the client does not say."""
        peaks = [s["peak_pool_bytes"] for s in self._memory_stats() if "peak_pool_bytes" in s]
        return max(peaks) if peaks else None

    def profile(self, run_steps: Callable[..., None], trace_path: Path) -> None:
        """`run_steps` under `jax.profiler`, each step inside a `TraceAnnotation` span named
        STEP_MARK: its Chrome trace, every device's streams on one timeline, renamed over the
        trace's name (`safe_files.write_file`: never written through a link left there)."""
        with tempfile.TemporaryDirectory() as logs:
            with jax.profiler.trace(logs):
                run_steps(lambda: jax.profiler.TraceAnnotation(STEP_MARK))
            (exported,) = Path(logs).rglob("*.trace.json.gz")
            write_file(trace_path.parent, trace_path.name, gzip.decompress(exported.read_bytes()))

    def framework_versions(self) -> dict[str, str]:
        return {"keras": keras.__version__, "jax": jax.__version__, "jaxlib": jaxlib.__version__}

    def save_state(self, path: Path) -> None:
        self.parallel.write_back(self.state)
        keras_models.save_trainable_weights(self.model, path)

    def close(self) -> None:
        keras.distribution.set_distribution(None)


def create_adapter(strategy: str) -> JaxDataParallelAdapter:
    return JaxDataParallelAdapter(strategy)


def one_ahead(batches: Iterator[Batch]) -> Iterator[Batch]:
    """Each batch taken (its asynchronous copy to the devices started) one step before it is
    handed out, so batch k+1 travels while step k computes."""
    batches = iter(batches)
    ready = next(batches, None)
    for following in batches:
        yield ready
        ready = following
    if ready is not None:
        yield ready
