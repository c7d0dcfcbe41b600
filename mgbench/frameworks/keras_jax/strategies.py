"""One small object per keras-jax strategy: how it lays out the devices (its mesh), which compiled
step it runs, and how it holds the variables between steps.

The adapter (`mgbench.frameworks.keras_jax.adapter`) holds what the strategies share (model,
input and its staging, evaluation, profiling) and asks its strategy object wherever they
differ, instead of comparing strategy names, as PyTorch's adapter asks `pytorch/strategies.py`.
An unstaged twin (`jax-shard-map-unstaged`) runs its staged strategy's object: only its input
differs, which is the adapter's.

Each batch is sharded along its first axis. The data-parallel strategies replicate the variables
over the devices, and split the step in one of two ways:
- `jax-dp` / `jax-dp-on-batch`: keras.distribution.DataParallel. XLA's SPMD partitioner
  compiles one global step, so every batch-norm's mean and variance are computed over the
  global batch: a synchronous batch-norm, with all-reduces in the forward and the backward of
  every batch-norm layer, on the critical path. That is a different job from DDP's, and
  slower (BENCHMARKS.md).
- `jax-shard-map`: the step of one device, mapped over the devices with `jax.shard_map`: each
  device normalises its own shard (local batch-norm statistics, as DDP and Horovod), and the
  gradients are averaged with `pmean` after the backward.
The step each one runs:
- `jax-dp` (`DataParallel`): Keras' own jitted train step (`model.make_train_function`, what
  `fit` runs) called on a state held as JAX arrays between steps (evaluation reads it
  directly), synced back into the Keras variables only for saving.
- `jax-dp-on-batch` (`DataParallelOnBatch`): `model.train_on_batch` on the pre-sharded arrays:
  the same compiled step, plus a sync of every variable and a host read of the logs after each step.
- `jax-shard-map` (`ShardMap`): its own step, under `jax.shard_map` (above), on a state packed
  into one array per dtype (`packed_state.py`: per-buffer host time between synchronised steps).
`jax-fsdp` (`FullyShardedDataParallel`) shards the variables too: every large weight, and the
optimizer's slots beside it, is split along the same axis as the batch, and XLA's SPMD partitioner
gathers each weight where the step uses it and reduce-scatters its gradient (ZeRO-3, FSDP's
FULL_SHARD). It runs jax-dp's step under `keras.distribution.ModelParallel`, so its batch-norms are
synchronous as jax-dp's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import jax
import keras
import numpy as np

from mgbench.frameworks.keras_jax.packed_state import Packed, PackedTree

DeviceState = tuple[list[jax.Array], ...]
"""The variables' values by group, in the order of a train step's state (`variable_groups`)."""
State = Any
"""What a strategy holds between steps: a `DeviceState`, a `Packed` one, or nothing."""
Step = Callable[[State, jax.Array, jax.Array], tuple[jax.Array, State]]
BATCH_AXIS = "batch"


def variable_groups(model: keras.Model) -> tuple[list[keras.Variable], ...]:
    """The Keras variables in the order of a train step's state."""
    return (
        model.trainable_variables,
        model.non_trainable_variables,
        model.optimizer.variables,
        model.metrics_variables,
    )


def variable_values(model: keras.Model) -> DeviceState:
    return tuple([v.value for v in group] for group in variable_groups(model))


class DataParallel:
    """`jax-dp`: Keras' DataParallel distribution and its own jitted train step, on a state held
    between steps."""

    def mesh(self, devices: list[jax.Device]) -> jax.sharding.Mesh:
        """The devices' mesh, the one Keras' distribution compiles its step for."""
        distribution = keras.distribution.DataParallel(devices=devices)
        keras.distribution.set_distribution(distribution)
        return distribution.device_mesh.backend_mesh

    def prepare(self, model: keras.Model, mesh: jax.sharding.Mesh) -> None:
        """After the model is compiled and its train function made: where the held state lies,
        the step this strategy runs and the compiled setting of the learning rate."""
        self.model = model
        self.placed = self.state_placement(mesh)
        self._set_rate = jax.jit(self._with_rate, out_shardings=self.placed, donate_argnums=0)
        self.step = self.compiled_step(mesh)

    def state_placement(self, mesh: jax.sharding.Mesh) -> Any:
        """Where the held state lies, as the compiled step returns it (a sharding, or a tree of
        them shaped as the state): replicated on every device."""
        return jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())

    def compiled_step(self, mesh: jax.sharding.Mesh) -> Step:
        """Keras' train function (what `fit` runs) as (state, images, labels) -> (loss, state)."""
        fresh_metrics = [np.zeros(v.shape, v.dtype) for v in self.model.metrics_variables]
        train_function = self.model.train_function

        def step(state: DeviceState, images: jax.Array, labels: jax.Array) -> tuple[jax.Array, DeviceState]:
            # Keras' step logs its loss tracker's mean: zero it so the loss is this step's.
            logs, state = train_function((*state[:3], list(fresh_metrics)), iter([(images, labels)]))
            return logs["loss"], state

        return step

    def pack(self, groups: DeviceState) -> State:
        """The variables' values as this strategy holds them (traceable)."""
        return groups

    def unpack(self, state: State) -> DeviceState:
        """The inverse of `pack` (traceable)."""
        return state

    def initial_state(self) -> State:
        """The variables' values, placed on the mesh as the compiled step returns them
        (`state_placement`); else the second step sees differently placed inputs and compiles the
        step again."""
        return jax.device_put(self.pack(variable_values(self.model)), self.placed)

    def held(self, state: State) -> DeviceState:
        """The variables' current values, by group."""
        return self.unpack(state)

    def train(self, state: State, images: jax.Array, labels: jax.Array) -> tuple[Any, State]:
        """One step on a sharded batch: its loss, still on the devices, and the state after it."""
        return self.step(state, images, labels)

    def with_rate(self, state: State, learning_rate: float) -> State:
        """The state with the optimizer's learning rate set to `learning_rate`."""
        return self._set_rate(state, np.float32(learning_rate))

    def _with_rate(self, state: State, learning_rate: jax.Array) -> State:
        """The held state with the optimizer's learning-rate variable set (compiled, state donated)."""
        groups = self.unpack(state)
        optimizer = self.model.optimizer
        slot = next(i for i, v in enumerate(optimizer.variables) if v is optimizer.learning_rate)
        rates = list(groups[2])
        rates[slot] = learning_rate.astype(rates[slot].dtype)
        return self.pack((*groups[:2], rates, *groups[3:]))

    def write_back(self, state: State) -> None:
        """The held state written into the Keras variables (for saving)."""
        for group, values in zip(variable_groups(self.model), self.held(state)):
            for variable, value in zip(group, values):
                variable.assign(value)


class DataParallelOnBatch(DataParallel):
    """`jax-dp-on-batch`: `model.train_on_batch` under the same distribution; Keras' variables
    are its state, so it holds none of its own."""

    def prepare(self, model: keras.Model, mesh: jax.sharding.Mesh) -> None:
        self.model = model

    def initial_state(self) -> None:
        return None

    def held(self, state: None) -> DeviceState:
        return variable_values(self.model)

    def train(self, state: None, images: jax.Array, labels: jax.Array) -> tuple[Any, None]:
        return self.model.train_on_batch(images, labels, return_dict=True)["loss"], state

    def with_rate(self, state: None, learning_rate: float) -> None:
        self.model.optimizer.learning_rate = learning_rate
        return state

    def write_back(self, state: None) -> None:
        """Nothing to write: Keras' variables are the state."""


class ShardMap(DataParallel):
    """`jax-shard-map`: one device's step mapped over a mesh of its own with `jax.shard_map`, on
    the variables packed into one array per dtype."""

    def mesh(self, devices: list[jax.Device]) -> jax.sharding.Mesh:
        return jax.sharding.Mesh(np.array(devices), (BATCH_AXIS,))

    def prepare(self, model: keras.Model, mesh: jax.sharding.Mesh) -> None:
        self.packing = PackedTree(variable_values(model))
        self._unpacked = jax.jit(self.packing.unpack)
        super().prepare(model, mesh)

    def pack(self, groups: DeviceState) -> Packed:
        return self.packing.pack(groups)

    def unpack(self, state: Packed) -> DeviceState:
        return self.packing.unpack(state)

    def held(self, state: Packed) -> DeviceState:
        return self._unpacked(state)

    def compiled_step(self, mesh: jax.sharding.Mesh) -> Step:
        """The mapped step, compiled with the state donated. It returns the loss itself and never
        reads Keras' loss tracker: its state goes back in as it came out, with no host array to
        copy onto the devices each step."""
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
            device_step, mesh=mesh, in_specs=(replicated, sharded, sharded), out_specs=(replicated, replicated)
        )
        return jax.jit(mapped, donate_argnums=0)


SHARDED_FROM_ELEMENTS = 4096
"""The fewest elements of a variable `jax-fsdp` shards. Smaller ones (biases, the scales and
offsets of norms: vectors of the model's width) stay replicated: sharding one saves a few KiB a
device for a gather of its own. Every matrix of the catalogue's models reaches it (a 1x1
convolution from 64 to 64 channels; gpt2-tiny's 64 x 64 position embedding)."""


def data_axis_spec(shape: Sequence[int], devices: int) -> tuple[str | None, ...] | None:
    """How `jax-fsdp` lays out a variable of `shape` over `devices`: split along its largest
    dimension that the device count divides (a convolution's output channels, a matrix's wider
    side), on the batch's axis; None (replicated) on one device, below `SHARDED_FROM_ELEMENTS`,
    or where no dimension divides evenly (XLA would pad the shards)."""
    if devices == 1 or int(np.prod(shape, dtype=np.int64)) < SHARDED_FROM_ELEMENTS:
        return None
    even = [axis for axis, size in enumerate(shape) if size % devices == 0]
    if not even:
        return None
    split = max(even, key=lambda axis: shape[axis])
    return tuple(BATCH_AXIS if axis == split else None for axis in range(len(shape)))


class ShardedAlongData(keras.distribution.ModelParallel):
    """`keras.distribution.ModelParallel` over one axis, the batch's, whose `LayoutMap` is written
    by shape: a LayoutMap's rules match a variable's path, and which variables are large is known
    only from their shapes, so each variable, as it is made, enters the map under its own path with
    the layout `data_axis_spec` gives it (replicated ones are left out, which ModelParallel
    replicates). The optimizer makes its slots with the layout of their weight, so they are sharded
    alike. The map ends up listing every sharded variable."""

    def get_variable_layout(self, variable: keras.Variable) -> keras.distribution.TensorLayout:
        if getattr(variable, "_layout", None) is None:
            spec = data_axis_spec(variable.shape, self.device_mesh.devices.size)
            # Asked for a path no rule matches, a LayoutMap answers None (so `in` is always true).
            if spec is not None and self._layout_map[variable.path] is None:
                self._layout_map[re.escape(variable.path)] = spec
        return super().get_variable_layout(variable)


class FullyShardedDataParallel(DataParallel):
    """`jax-fsdp`: jax-dp's step (Keras' own train function on a held state) under
    `ShardedAlongData`, which shards every large weight and its optimizer slots along the batch's
    axis.

    Why Keras' distribution rather than shardings of this module's own on the packed state
    (`ShardMap`'s): Keras lays out each variable as it is made, its optimizer's slots after their
    weights, and compiles its train function to return every variable as laid out, so the held
    state stays sharded from step to step with no layout kept here; a packed state, one flat array
    per dtype, has no per-weight shape to split. With the weights and the batch split on one axis,
    XLA's SPMD partitioner compiles the gathers of the weights where they are used and the
    reduce-scatters of their gradients into the step, and the optimizer updates each device's
    shard only.

    Between steps each device holds its shard of every sharded weight and slot. Inside the step
    XLA gathers a weight once and keeps it from the forward to the backward where both use it as
    it is (a dense layer's kernel; a convolution's is gathered again, reversed, for the backward),
    as FSDP's SHARD_GRAD_OP does, so the step's peak memory holds those weights whole while they
    are live."""

    def mesh(self, devices: list[jax.Device]) -> jax.sharding.Mesh:
        device_mesh = keras.distribution.DeviceMesh((len(devices),), (BATCH_AXIS,), devices)
        distribution = ShardedAlongData(layout_map=keras.distribution.LayoutMap(device_mesh), batch_dim_name=BATCH_AXIS)
        keras.distribution.set_distribution(distribution)
        return device_mesh.backend_mesh

    def state_placement(self, mesh: jax.sharding.Mesh) -> tuple[list[jax.sharding.Sharding], ...]:
        """Each variable where Keras laid it out, as its train function returns it."""
        return tuple([v.value.sharding for v in group] for group in variable_groups(self.model))


STRATEGIES: dict[str, type[DataParallel]] = {
    "jax-dp": DataParallel,
    "jax-dp-on-batch": DataParallelOnBatch,
    "jax-shard-map": ShardMap,
    "jax-fsdp": FullyShardedDataParallel,
}
"""Each staged strategy's object, by name; an unstaged twin runs its staged strategy's (`StrategySpec.kind`)."""
