"""What the `keras` (over TensorFlow) and `tensorflow` adapters share: devices, strategy, model,
input staging, real data, evaluation, memory and weights. Subclasses supply only the training
step (and name its optimizer), so the two columns of a compare differ in exactly one thing:
Keras' own step versus a hand-written loop.

Real data (`--dataset`) is read by tf.data (`keras_tf/data.py`) over the shared sample keys; staged
strategies distribute it to the devices, unstaged twins slice its host batches in the step.
Evaluation scores every image of the split in one compiled forward per global batch.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from mgbench.core.config import RunConfig
from mgbench.datasets.synthetic import Shard
from mgbench.frameworks.keras import data
from mgbench.frameworks.keras import models as keras_models
from mgbench.frameworks.keras import weights as keras_weights
from mgbench.frameworks.keras_tf import attention, strategies
from mgbench.frameworks.keras_tf import data as tf_data
from mgbench.frameworks.specs import StrategySpec
from mgbench.measure.metrics import language_model_metrics
from mgbench.training.loaders import loader_workers
from mgbench.training.protocol import Adapter, ModelInfo, Placement


class StrategyAdapter(Adapter):
    """One process mirrors the model over every device of the run through a tf.distribute strategy."""

    def __init__(self, strategy: StrategySpec):
        super().__init__(strategy.name)
        self.strategy_kind, self.staged = strategy.kind, strategy.staged
        self._loss: Any = 0.0

    def setup(self, config: RunConfig) -> ModelInfo:
        self.accept(config)
        devices = strategies.device_names(config)
        self.distribution = strategies.strategy_for(self.strategy_kind, devices)
        self._placement = Placement(rank=0, world_size=1, device_names=devices)
        self.real, self.spec = data.keras_task(config, loader_workers(config.job.workers, 1))
        with self.distribution.scope():
            self.model, digest = keras_weights.started_model(self.spec, config)
            self.build_step()
        self.forward = tf.function(lambda inputs: self.model(inputs, training=False))
        return ModelInfo(
            parameters=keras_models.trainable_parameters(self.model),
            init_digest=digest,
            attention_kernel=attention.attention_kernel(self.spec, compiled=config.job.compile is not None),
        )

    def build_step(self) -> None:
        """Inside the strategy's scope: `self.optimizer`, the loss of `self.spec` and the compiled step."""
        raise NotImplementedError

    def batches(self) -> Iterator[Any]:
        if self.real is not None:
            return self._fed(tf_data.train_dataset(self.real, None))
        pool = strategies.global_pool(self.config)
        if self.config.job.data_on_device:
            return strategies.resident_batches(self.distribution, pool)
        if self.staged:
            return strategies.staged_batches(self.distribution, pool)
        return strategies.unstaged_batches(pool)

    def _fed(self, dataset: tf.data.Dataset) -> Iterator[Any]:
        """Real-data batches: distributed to the devices (staged) or as host arrays (unstaged)."""
        return strategies.distributed(self.distribution, dataset) if self.staged else dataset.as_numpy_iterator()

    def steps_per_epoch(self) -> int:
        return self.real.steps_per_epoch()

    def epoch_batches(self, epoch: int) -> Iterator[Any]:
        return self._fed(tf_data.train_dataset(self.real, epoch))

    def set_learning_rate(self, learning_rate: float) -> None:
        self.optimizer.learning_rate = learning_rate

    def replica_inputs(self, batch: Any) -> Any:
        """Staged batches are already distributed; host batches are split for the replicas now."""
        return batch if self.staged else strategies.split_host_batch(self.distribution, batch)

    def synchronize(self) -> None:
        tf.test.experimental.sync_devices()

    def last_loss(self) -> float:
        return float(self._loss)

    def evaluate(self, split: str = "val") -> dict[str, float]:
        """A language model's loss per token over the held-out global batches (a stream's fixed
        windows of `split`, or the held-out synthetic batch: `data.held_out_windows`) and its
        perplexity; an image model's loss and AUC over every image of `split` on real data, else
        its loss on the held-out batch."""
        loss = keras_models.build_loss(self.spec)
        shard = Shard(0, self.config.global_batch)
        if self.spec.language_model is not None:
            windows = data.held_out_windows(self.config, self.real, split, shard)
            return language_model_metrics(float(np.mean([float(loss(y, self.forward(x))) for x, y in windows])))
        if self.real is not None:
            logits, targets = zip(
                *((self.forward(x).numpy(), y.numpy()) for x, y in tf_data.eval_dataset(self.real, split))
            )
            return self.real.metrics(np.concatenate(logits), np.concatenate(targets))
        images, labels = data.held_out_of(self.config, shard)
        return {"loss": float(loss(labels, self.model(images, training=False)))}

    def peak_device_memory_bytes(self) -> int | None:
        return max(tf.config.experimental.get_memory_info(name)["peak"] for name in self._placement.device_names)

    def framework_versions(self) -> dict[str, str]:
        return {"keras": keras.__version__, **strategies.versions(self.config.job.device_kind.on_gpu)}

    def save_state(self, path: Path) -> None:
        keras_models.save_trainable_weights(self.model, path)

    def close(self) -> None:
        keras.backend.clear_session()
