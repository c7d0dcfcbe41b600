"""What the `keras` (over TensorFlow) and `tensorflow` adapters share: devices, strategy, model,
input staging, evaluation, memory and weights. Subclasses supply only the training step, so the
two columns of a compare differ in exactly one thing: Keras' own step versus a hand-written loop.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import keras
import tensorflow as tf

from mgbench.common.config import RunConfig
from mgbench.common.protocol import Adapter, ModelInfo, Placement
from mgbench.datasets.synthetic import Shard, held_out_batch
from mgbench.frameworks.keras import models as keras_models
from mgbench.frameworks.keras import tf_distribute

UNSTAGED_SUFFIX = "-unstaged"


class StrategyTrainer(Adapter):
    """One process mirrors the model over every device of the run through a tf.distribute strategy."""

    def __init__(self, strategy: str):
        super().__init__(strategy)
        self.staged = not strategy.endswith(UNSTAGED_SUFFIX)
        self.strategy_kind = strategy.removesuffix(UNSTAGED_SUFFIX)
        self._loss: Any = 0.0

    def setup(self, config: RunConfig) -> ModelInfo:
        self.accept(config)
        devices = tf_distribute.device_names(config)
        self.distribution = tf_distribute.strategy_for(self.strategy_kind, devices)
        self._placement = Placement(rank=0, world_size=1, device_names=devices)
        keras.utils.set_random_seed(config.seed)
        keras_models.set_precision(config.precision)
        with self.distribution.scope():
            self.model = keras_models.build_model(config.spec, config.input_size, config.data_format)
            self.build_step()
        return ModelInfo(parameters=keras_models.trainable_parameters(self.model))

    def build_step(self) -> None:
        """Inside the strategy's scope: optimizer, loss and the compiled step."""
        raise NotImplementedError

    def batches(self) -> Iterator[Any]:
        pool = tf_distribute.global_pool(self.config)
        if self.staged:
            return tf_distribute.staged_batches(self.distribution, pool)
        return tf_distribute.unstaged_batches(pool)

    def replica_inputs(self, batch: Any) -> Any:
        """Staged batches are already distributed; host batches are split for the replicas now."""
        return batch if self.staged else tf_distribute.split_host_batch(self.distribution, batch)

    def synchronize(self) -> None:
        tf.test.experimental.sync_devices()

    def last_loss(self) -> float:
        return float(self._loss)

    def evaluate(self) -> dict[str, float]:
        channels_last = self.config.data_format == "channels_last"
        images, labels = held_out_batch(
            self.config.spec,
            self.config.input_size,
            Shard(0, self.config.global_batch),
            self.config.seed + 1,
            channels_last,
        )
        loss = keras_models.build_loss(self.config.spec)(labels, self.model(images, training=False))
        return {"loss": float(loss)}

    def peak_device_memory_bytes(self) -> int | None:
        return max(tf.config.experimental.get_memory_info(name)["peak"] for name in self._placement.device_names)

    def framework_versions(self) -> dict[str, str]:
        return {"keras": keras.__version__, **tf_distribute.versions(self.config.device_kind == "cuda")}

    def save_state(self, path: Path) -> None:
        keras_models.save_trainable_weights(self.model, path)

    def close(self) -> None:
        keras.backend.clear_session()
