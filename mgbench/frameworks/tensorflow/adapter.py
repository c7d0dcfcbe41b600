"""TensorFlow adapter: a custom training loop, tf.function around strategy.run, MirroredStrategy.

The raw-TF column of a compare: the same keras.applications models, tf.data pipeline and
optimizer as the `keras` adapter (`mgbench.frameworks.keras_tf.strategy_adapter`), but the step is written out:
each replica takes its loss over its shard divided by the global batch, tape gradients, and the
optimizer all-reduces (sums) them across replicas before the update.

With `--compile`, XLA compiles each replica's forward and backward (`jit_compile=True`); the
all-reduce and the update stay in the TF graph around it, because a compiled function runs on
one device and cannot update the copies of mirrored variables held by the others (TensorFlow's
XLA known issue "tf.Variable on a different device").
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from mgbench.frameworks.keras import models as keras_models
from mgbench.frameworks.keras_tf.strategy_adapter import StrategyAdapter
from mgbench.frameworks.tensorflow.spec import FRAMEWORK


class CustomLoopAdapter(StrategyAdapter):
    def build_step(self) -> None:
        self.optimizer = keras_models.build_optimizer(self.config)
        self.optimizer.build(self.model.trainable_variables)
        per_example = keras_models.build_loss(self.spec, reduction="none")
        global_batch = self.config.global_batch
        model, optimizer = self.model, self.optimizer

        def loss_and_gradients(images: tf.Tensor, labels: tf.Tensor) -> tuple[tf.Tensor, list[tf.Tensor]]:
            with tf.GradientTape() as tape:
                logits = model(images, training=True)
                loss = tf.nn.compute_average_loss(per_example(labels, logits), global_batch_size=global_batch)
                scaled = optimizer.scale_loss(loss)
            return loss, tape.gradient(scaled, model.trainable_variables)

        if self.config.job.compile is not None:
            loss_and_gradients = tf.function(loss_and_gradients, jit_compile=True)

        def replica_step(images: tf.Tensor, labels: tf.Tensor) -> tf.Tensor:
            loss, gradients = loss_and_gradients(images, labels)
            optimizer.apply_gradients(zip(gradients, model.trainable_variables))
            return loss

        @tf.function
        def distributed_step(batch: Any) -> tf.Tensor:
            losses = self.distribution.run(replica_step, args=batch)
            return self.distribution.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)

        self.step = distributed_step

    def train_step(self, batch: Any) -> None:
        self._loss = self.step(self.replica_inputs(batch))


def create_adapter(strategy: str) -> CustomLoopAdapter:
    return CustomLoopAdapter(FRAMEWORK.strategy(strategy))
