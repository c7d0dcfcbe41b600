"""Keras 3 adapter over JAX, with no TensorFlow anywhere.

For machines where TensorFlow has no GPU build. Variables are replicated over the devices and
each batch is sharded along its first axis. Two ways to split the step:
- `jax-dp` / `jax-dp-on-batch`: keras.distribution.DataParallel. XLA's SPMD partitioner
  compiles one global step, so every batch-norm's mean and variance are computed over the
  global batch: a synchronous batch-norm, with all-reduces in the forward and the backward of
  every batch-norm layer, on the critical path. That is a different job from DDP's, and
  slower (BENCHMARKS.md).
- `jax-shard-map`: the step of one device, mapped over the devices with `jax.shard_map`: each
  device normalises its own shard (local batch-norm statistics, as DDP and Horovod), and the
  gradients are averaged with `pmean` after the backward.

Why not `fit` on numpy arrays (far slower than PyTorch DDP, BENCHMARKS.md): with a
distribution set, Keras' iterator copies each batch to the devices synchronously, one step at
a time. Here the batch pool sits in page-locked host memory, and batches are sharded onto the
devices one step ahead (`device_put` is asynchronous, so batch k+1 travels while step k
computes; with `--data-on-device` the pool is sharded once), and the step is chosen by strategy:
- `jax-dp`: Keras' own jitted train step (`model.make_train_function`, what `fit` runs) called
  on a state held as JAX arrays between steps (evaluation reads it directly), synced back into
  the Keras variables only for saving.
- `jax-dp-on-batch`: `model.train_on_batch` on the pre-sharded arrays: the same compiled step,
  plus a sync of every variable and a host read of the logs after each step.
- `jax-shard-map`: its own step, under `jax.shard_map` (above), on a state packed into one
  array per dtype (`packed_state.py`: per-buffer host time between synchronised steps).

Input staging: the strategies above are staged (batch k+1 sharded onto the devices while step k
runs); `jax-shard-map-unstaged` shards each batch from host arrays when the step takes it.
Real data (`--dataset`) is read by `keras.utils.PyDataset` with worker processes (`data.py`):
uint8 pixels of the global batch, sharded over the devices as the synthetic batches are (device
d holds the shared shard of rank d) and normalised there by one compiled function; staged, the
batches are placed on a thread of their own (`common/ahead.py`), two ahead of the step.
"""

from __future__ import annotations

import gzip
import tempfile
from collections.abc import Callable, Iterator
from functools import partial
from itertools import cycle
from pathlib import Path
from typing import Any, TypeVar

import jax
import jaxlib
import keras
import numpy as np

from mgbench.common.ahead import Ahead
from mgbench.common.config import RunConfig
from mgbench.common.errors import UsageError
from mgbench.common.protocol import Adapter, ModelInfo, Placement
from mgbench.common.safe_files import write_file
from mgbench.common.trace_events import STEP_MARK
from mgbench.common.workers import loader_workers
from mgbench.datasets.resolve import dataset_for
from mgbench.datasets.synthetic import Shard, held_out_batch, synthetic_pool
from mgbench.frameworks.keras import data
from mgbench.frameworks.keras import models as keras_models
from mgbench.frameworks.keras_jax.packed_state import Packed, PackedTree

DeviceBatch = tuple[jax.Array, jax.Array]
Batch = TypeVar("Batch")


DeviceState = tuple[list[jax.Array], ...]
BATCH_AXIS = "batch"
PLACED_AHEAD = 2
"""Real-data batches placed on the devices ahead of the step when staged: one ready for the next
step while the one after it is copied."""


class JaxDataParallelTrainer(Adapter):
    def __init__(self, strategy: str):
        super().__init__(strategy)
        kind, self.staged = data.staging(strategy)
        self.on_batch = kind == "jax-dp-on-batch"
        self.shard_map = kind == "jax-shard-map"

    def setup(self, config: RunConfig) -> ModelInfo:
        if keras.backend.backend() != "jax":
            raise UsageError(f"keras-jax needs KERAS_BACKEND=jax, Keras runs on {keras.backend.backend()}")
        self.accept(config)
        platform = "cpu" if config.device_kind == "cpu" else "gpu"
        devices = jax.devices(platform)
        if len(devices) < config.devices:
            raise UsageError(f"{config.devices} {platform} devices asked for, JAX sees {len(devices)}")
        devices = devices[: config.devices]
        self._placement = Placement(rank=0, world_size=1, device_names=[str(d.device_kind) for d in devices])
        if self.shard_map:
            self.mesh = jax.sharding.Mesh(np.array(devices), (BATCH_AXIS,))
        else:
            distribution = keras.distribution.DataParallel(devices=devices)
            keras.distribution.set_distribution(distribution)
            self.mesh = distribution.device_mesh.backend_mesh
        keras.utils.set_random_seed(config.seed)
        keras_models.set_precision(config.precision)
        dataset = dataset_for(config)
        self.real = data.RealData(dataset, config, loader_workers(config.workers, 1)) if dataset else None
        self.spec = dataset.task_spec(config.spec) if dataset else config.spec
        self.model = keras_models.build_model(self.spec, config.input_size, config.data_format)
        self.model.compile(
            optimizer=keras_models.build_optimizer(config), loss=keras_models.build_loss(self.spec), jit_compile=True
        )
        self.model.optimizer.build(self.model.trainable_variables)
        self.model.make_train_function()
        self.forward = jax.jit(self._inference)
        self.normalise = jax.jit(partial(data.normalised, channels_last=config.data_format == "channels_last"))
        self.replicated = jax.sharding.NamedSharding(self.mesh, jax.sharding.PartitionSpec())
        if self.shard_map:
            self.packing = PackedTree(self._variable_values())
            self.step = self._shard_map_step()
            self.unpack = jax.jit(self.packing.unpack)
        else:
            self.step = self.model.train_function
        self.state = None if self.on_batch else self._variables_state()
        self._set_rate = jax.jit(self._with_rate, out_shardings=self.replicated, donate_argnums=0)
        self.learning_rate = config.learning_rate
        self.fresh_metrics = [np.zeros(v.shape, v.dtype) for v in self.model.metrics_variables]
        self._loss: Any = 0.0
        return ModelInfo(parameters=keras_models.trainable_parameters(self.model))

    def _variable_groups(self) -> tuple[list[keras.Variable], ...]:
        """The Keras variables in the order of a train step's state."""
        model = self.model
        return (
            model.trainable_variables,
            model.non_trainable_variables,
            model.optimizer.variables,
            model.metrics_variables,
        )

    def _variable_values(self) -> DeviceState:
        return tuple([v.value for v in group] for group in self._variable_groups())

    def _variables_state(self) -> DeviceState | Packed:
        """The variables' values (packed, for jax-shard-map), replicated on the mesh as the
        compiled step returns them; else the second step sees differently placed inputs and
        compiles the step again."""
        values = self._variable_values()
        return jax.device_put(self.packing.pack(values) if self.shard_map else values, self.replicated)

    def _with_rate(self, state: DeviceState | Packed, learning_rate: jax.Array) -> DeviceState | Packed:
        """The held state with the optimizer's learning-rate variable set (compiled, state donated)."""
        groups = self.packing.unpack(state) if self.shard_map else state
        optimizer = self.model.optimizer
        slot = next(i for i, v in enumerate(optimizer.variables) if v is optimizer.learning_rate)
        rates = list(groups[2])
        rates[slot] = learning_rate.astype(rates[slot].dtype)
        groups = (*groups[:2], rates, *groups[3:])
        return self.packing.pack(groups) if self.shard_map else groups

    def held_state(self) -> DeviceState:
        """The variables' current values, by group, wherever this strategy holds them."""
        if self.on_batch:
            return self._variable_values()
        return self.unpack(self.state) if self.shard_map else self.state

    def _shard_map_step(self) -> Any:
        """`jax-shard-map`'s compiled step, called as Keras' train function is: (state, data)."""
        model = self.model
        grad_fn = jax.value_and_grad(model.compute_loss_and_updates, has_aux=True)

        def device_step(packed: Packed, images: jax.Array, labels: jax.Array) -> tuple[jax.Array, Packed]:
            trainable, non_trainable, optimizer_state, metrics = self.packing.unpack(packed)
            # This device's own copy of the weights: differentiating the replicated weights
            # directly would hand back gradients already summed over the devices.
            local = jax.lax.pcast(trainable, BATCH_AXIS, to="varying")
            (_, (loss, _, non_trainable, _)), grads = grad_fn(
                local, non_trainable, metrics, images, labels, None, training=True, optimizer_variables=optimizer_state
            )
            # The moving batch-norm statistics are averaged too, so the replicas stay identical.
            grads, non_trainable, loss = jax.lax.pmean((grads, non_trainable, loss), BATCH_AXIS)
            trainable, optimizer_state = model.optimizer.stateless_apply(optimizer_state, grads, trainable)
            return loss, self.packing.pack((trainable, non_trainable, optimizer_state, metrics))

        replicated, sharded = jax.sharding.PartitionSpec(), jax.sharding.PartitionSpec(BATCH_AXIS)
        mapped = jax.shard_map(
            device_step, mesh=self.mesh, in_specs=(replicated, sharded, sharded), out_specs=(replicated, replicated)
        )
        step = jax.jit(mapped, donate_argnums=0)

        def train_function(state: Packed, data: Iterator[DeviceBatch]) -> tuple[dict[str, jax.Array], Packed]:
            loss, state = step(state, *next(data))
            return {"loss": loss}, state

        return train_function

    def _inference(self, trainable: list[jax.Array], non_trainable: list[jax.Array], images: jax.Array) -> jax.Array:
        """The model in inference mode as one compiled function (called eagerly, Keras over JAX
        dispatches layer by layer, minutes for DenseNet-121)."""
        return self.model.stateless_call(trainable, non_trainable, images, training=False)[0]

    def _sync_variables(self) -> None:
        """Write the held state back into the Keras variables (for saving)."""
        if self.on_batch:
            return
        for group, values in zip(self._variable_groups(), self.held_state()):
            for variable, value in zip(group, values):
                variable.assign(value)

    def shard(self, batch: tuple[Any, Any], memory_kind: str = "device") -> DeviceBatch:
        """Split along the batch axis over the devices (the layout DataParallel gives data), into
        the devices' memory or, with `memory_kind="pinned_host"`, page-locked host memory."""
        axis = self.mesh.axis_names[0]
        sharded = jax.sharding.NamedSharding(self.mesh, jax.sharding.PartitionSpec(axis), memory_kind=memory_kind)
        return tuple(jax.device_put(array, sharded) for array in batch)

    def batches(self) -> Iterator[DeviceBatch]:
        if self.real is not None:
            return self._fed(self.real.train(Shard(0, self.config.global_batch), None))
        channels_last = self.config.data_format == "channels_last"
        pool = synthetic_pool(
            self.config.spec,
            self.config.input_size,
            Shard(0, self.config.global_batch),
            self.config.seed,
            channels_last,
        )
        if self.config.data_on_device:
            return cycle([self.shard(batch) for batch in pool])
        if not self.staged:
            return (self.shard(batch) for batch in cycle(pool))
        # Host-fed like the PyTorch adapter's pinned pool: from numpy (pageable memory) one
        # process copies every device's share through a staging buffer, showing as input wait;
        # from page-locked memory each device's share is one DMA.
        return one_ahead(self.shard(batch) for batch in cycle([self.shard(b, "pinned_host") for b in pool]))

    def _placed(self, batch: data.HostBatch) -> DeviceBatch:
        """A loader's uint8 batch sharded onto the devices and normalised there."""
        pixels, targets = self.shard(batch)
        return self.normalise(pixels), targets

    def _fed(self, host: Iterator[data.HostBatch]) -> Iterator[DeviceBatch]:
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
        """The optimizer's rate in the held state (or Keras' variable, for jax-dp-on-batch)."""
        if learning_rate == self.learning_rate:
            return
        self.learning_rate = learning_rate
        if self.on_batch:
            self.model.optimizer.learning_rate = learning_rate
        else:
            self.state = self._set_rate(self.state, np.float32(learning_rate))

    def train_step(self, batch: DeviceBatch) -> None:
        images, labels = batch
        if self.on_batch:
            self._loss = self.model.train_on_batch(images, labels, return_dict=True)["loss"]
            return
        state = self.state
        if not self.shard_map:
            # Keras' step logs its loss tracker's mean: zero it so the loss is this step's.
            # jax-shard-map returns the loss itself and never reads the tracker: its state goes
            # back in as it came out, with no host array to copy onto the devices each step.
            state = (*state[:3], list(self.fresh_metrics))
        logs, self.state = self.step(state, iter([(images, labels)]))
        self._loss = logs["loss"]

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
        """On real data loss and AUC over every image of `split`; else the loss on the held-out batch."""
        trainable, non_trainable = self.held_state()[:2]
        if self.real is not None:
            return self._score(split, trainable, non_trainable)
        channels_last = self.config.data_format == "channels_last"
        batch = held_out_batch(
            self.config.spec,
            self.config.input_size,
            Shard(0, self.config.global_batch),
            self.config.seed + 1,
            channels_last,
        )
        images, labels = self.shard(batch)
        loss = keras_models.build_loss(self.spec)(labels, self.forward(trainable, non_trainable, images))
        return {"loss": float(loss)}

    def _score(self, split: str, trainable: list[jax.Array], non_trainable: list[jax.Array]) -> dict[str, float]:
        """Every image of the split through the compiled forward, each batch padded to the global
        batch so it shards evenly and the forward compiles once."""
        batch = self.config.global_batch
        logits, targets = [], []
        for pixels, labels in self.real.evaluation(split, 0, 1, batch):
            padded = np.zeros((batch, *pixels.shape[1:]), pixels.dtype)
            padded[: len(pixels)] = pixels
            images = self.normalise(self.shard((padded,))[0])
            logits.append(np.asarray(self.forward(trainable, non_trainable, images))[: len(pixels)])
            targets.append(labels)
        return self.real.metrics(np.concatenate(logits), np.concatenate(targets))

    def peak_device_memory_bytes(self) -> int | None:
        stats = [d.memory_stats() or {} for d in jax.devices("gpu")[: self.config.devices]]
        return max(s.get("peak_bytes_in_use", 0) for s in stats)

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
        self._sync_variables()
        keras_models.save_trainable_weights(self.model, path)

    def close(self) -> None:
        keras.distribution.set_distribution(None)


def create_trainer(strategy: str) -> JaxDataParallelTrainer:
    return JaxDataParallelTrainer(strategy)


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
