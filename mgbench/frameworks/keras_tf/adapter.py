"""Keras 3 adapter over TensorFlow: Keras' own compiled train step under a tf.distribute strategy.

- `mirrored`: tf.distribute.MirroredStrategy, variables mirrored on every device, gradients
  all-reduced (NCCL between GPUs).
- `central-storage`: tf.distribute.experimental.CentralStorageStrategy, variables on the CPU
  (the seeds' "parameter server on CPU"), computation mirrored on the devices.
- their unstaged twins (`-unstaged`, `StrategySpec.staged` False): the same strategy fed
  synchronously from host arrays instead of a tf.data pipeline prefetched to the devices
  (`mgbench.frameworks.keras_tf.strategies`); on real data the same tf.data pipeline
  (`keras_tf/data.py`) either way.

The driver owns the loop, so instead of `fit` each step calls the model's `train_function`
(what `fit` and `train_on_batch` call) on one batch; metrics are reset before each step so the
reported loss is that step's, averaged over replicas as `fit` does.

`--compile` is Keras' `jit_compile=True`: XLA compiles the whole step Keras builds around
`strategy.run`, the optimizer's update of the mirrored variables included. That runs on one
device only (a compiled function cannot reach variables on other devices), which is why Keras'
`jit_compile="auto"` turns XLA off under tf.distribute; the registry refuses it on more.
"""

from __future__ import annotations

from typing import Any

from mgbench.frameworks.keras import models as keras_models
from mgbench.frameworks.keras_tf.spec import FRAMEWORK
from mgbench.frameworks.keras_tf.strategy_adapter import StrategyAdapter


class KerasAdapter(StrategyAdapter):
    def build_step(self) -> None:
        self.optimizer = keras_models.build_optimizer(self.config)
        self.model.compile(
            optimizer=self.optimizer,
            loss=keras_models.build_loss(self.spec),
            jit_compile=self.config.job.compile is not None,
        )
        self.optimizer.build(self.model.trainable_variables)
        self.model.make_train_function()

    def train_step(self, batch: Any) -> None:
        self.model.reset_metrics()
        logs = self.model.train_function([self.replica_inputs(batch)])
        self._loss = logs["loss"]


def create_adapter(strategy: str) -> KerasAdapter:
    return KerasAdapter(FRAMEWORK.strategy(strategy))
