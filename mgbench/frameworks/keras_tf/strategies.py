"""TensorFlow devices, tf.distribute strategies and the input pipelines, shared by the `keras`
(Keras 3 over TensorFlow) and `tensorflow` (custom loop) adapters.

Devices: N GPUs, or without GPUs the host CPU split into N logical devices, which TensorFlow
allows only before it initialises its runtime (so `strategy_for` runs first in `setup`).

Input, the seeds' question of staging:
- staged: a tf.data pipeline of global batches, split by `experimental_distribute_dataset`
  and prefetched into every replica's device (two batches buffered per replica), so the copy
  of batch k+1 overlaps step k; `next()` returns batches already on the devices.
- unstaged: host numpy arrays; each step slices them per replica and the step's own inputs
  are copied to the devices synchronously, inside the step (the seeds' slow baseline).
Both cycle the same synthetic global batches in the same order, so they train identically.
On real data both read the same tf.data pipeline (`keras_tf/data.py`): staged distributes it,
unstaged iterates it on the host. `--data-on-device` (synthetic data) distributes the pool's
batches once and cycles them where they landed (`resident_batches`): no copy at all.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import cycle, islice

import numpy as np
import tensorflow as tf

from mgbench.core.config import RunConfig
from mgbench.core.errors import UsageError
from mgbench.datasets.synthetic import Shard
from mgbench.frameworks.keras.data import synthetic_pool_of
from mgbench.frameworks.memory import cap_bytes, memory_share

HostBatch = tuple[np.ndarray, np.ndarray]
PER_REPLICA_PREFETCH = 2


def device_names(config: RunConfig) -> list[str]:
    """The logical devices the strategy mirrors over (GPUs, or the CPU split into N)."""
    if not config.job.device_kind.on_gpu:
        tf.config.set_visible_devices([], "GPU")
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * config.devices)
        return [device.name for device in tf.config.list_logical_devices("CPU")]
    gpus = tf.config.list_physical_devices("GPU")
    if len(gpus) < config.devices:
        raise UsageError(
            f"{config.devices} GPUs asked for, TensorFlow sees {len(gpus)} (is tensorflow[and-cuda] installed?)"
        )
    tf.config.set_visible_devices(gpus[: config.devices], "GPU")
    # `--gpu-memory-gb` below the GPUs' memory: one logical device of that many MiB on each (which
    # excludes memory growth); else each GPU's memory taken as it is needed.
    limit = cap_bytes(config) if memory_share(config) is not None else None
    for gpu in gpus[: config.devices]:
        if limit is None:
            tf.config.experimental.set_memory_growth(gpu, True)
        else:
            tf.config.set_logical_device_configuration(
                gpu, [tf.config.LogicalDeviceConfiguration(memory_limit=limit >> 20)]
            )
    return [device.name for device in tf.config.list_logical_devices("GPU")]


def strategy_for(kind: str, devices: list[str]) -> tf.distribute.Strategy:
    """`mirrored`: variables mirrored on every device, gradients all-reduced (NCCL on GPUs).
    `central-storage`: variables on the CPU, computation mirrored on the devices."""
    if kind == "mirrored":
        return tf.distribute.MirroredStrategy(devices)
    if kind == "central-storage":
        return tf.distribute.experimental.CentralStorageStrategy(compute_devices=devices, parameter_device="/cpu:0")
    raise UsageError(f"no tf.distribute strategy {kind!r}")


def global_pool(config: RunConfig) -> list[HostBatch]:
    """The synthetic global batches, images in the model's layout or tokens (one process holds the
    whole batch)."""
    return synthetic_pool_of(config, Shard(0, config.global_batch))


def distributed(strategy: tf.distribute.Strategy, dataset: tf.data.Dataset) -> Iterator:
    """A dataset of global batches as distributed values: each replica its consecutive slice
    (the shared `Shard` of its rank), prefetched into its device."""
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    return iter(strategy.experimental_distribute_dataset(dataset.with_options(options), input_options(strategy)))


def pool_dataset(pool: list[HostBatch]) -> tf.data.Dataset:
    """The pool's global batches, in order, once."""
    images = np.concatenate([batch[0] for batch in pool])
    labels = np.concatenate([batch[1] for batch in pool])
    return tf.data.Dataset.from_tensor_slices((images, labels)).batch(len(pool[0][0]), drop_remainder=True)


def staged_batches(strategy: tf.distribute.Strategy, pool: list[HostBatch]) -> Iterator:
    """Distributed values already on the devices: tf.data, split per replica, prefetched."""
    return distributed(strategy, pool_dataset(pool).repeat().prefetch(tf.data.AUTOTUNE))


def resident_batches(strategy: tf.distribute.Strategy, pool: list[HostBatch]) -> Iterator:
    """`--data-on-device`: the pool's batches distributed onto the devices once, then cycled."""
    return cycle(list(islice(distributed(strategy, pool_dataset(pool)), len(pool))))


def input_options(strategy: tf.distribute.Strategy) -> tf.distribute.InputOptions | None:
    """Fetch to the devices, two batches per replica. CentralStorageStrategy gets None (its
    defaults: fetch to device, one batch per replica) because in TF 2.21 it crashes on any
    InputOptions (it reads a misspelt `experimental_replication_moden` attribute)."""
    if isinstance(strategy, tf.distribute.experimental.CentralStorageStrategy):
        return None
    return tf.distribute.InputOptions(
        experimental_fetch_to_device=True, experimental_per_replica_buffer_size=PER_REPLICA_PREFETCH
    )


def unstaged_batches(pool: list[HostBatch]) -> Iterator[HostBatch]:
    """Host arrays as they are; `split_host_batch` hands them to the replicas inside the step."""
    return cycle(pool)


def split_host_batch(strategy: tf.distribute.Strategy, batch: HostBatch):
    """Each replica's consecutive slice of a host global batch, as host tensors (copied by the step)."""
    per_replica = len(batch[0]) // strategy.num_replicas_in_sync

    def replica_slice(context: tf.distribute.experimental.ValueContext) -> tuple[tf.Tensor, tf.Tensor]:
        start = context.replica_id_in_sync_group * per_replica
        with tf.device("/cpu:0"):
            return tuple(tf.constant(array[start : start + per_replica]) for array in batch)

    return strategy.experimental_distribute_values_from_function(replica_slice)


def versions(use_gpu: bool) -> dict[str, str]:
    found = {"tensorflow": tf.__version__}
    if use_gpu:
        build = tf.sysconfig.get_build_info()
        found.update({k: str(build[k]) for k in ("cuda_version", "cudnn_version") if k in build})
    return found
