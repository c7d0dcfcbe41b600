"""Gluon (MXNet 1.9) adapter: one process drives every device; the kvstore sums the gradients.

- `device`: gluon.Trainer with kvstore 'device' (gradients summed on the devices).
- `nccl`: the same with kvstore 'nccl' (CUDA devices only).

A step: `split_and_load` puts each device's slice of the global batch on it; forward and loss
run per device under `autograd.record`, and each device keeps its own per-sample losses
(nothing is gathered to one device); backward runs on every device; `trainer.step(global_batch)`
sums the devices' gradients through the kvstore and rescales them by 1 / global batch. Because
backward starts from per-sample losses (summed), that is the gradient of the mean loss over the
global batch: what one device computes on the whole batch. The step's optimizer is
`sgd.TorchFormSGD`: momentum in torch's form, which Gluon's own SGD leaves once the rate changes.

Real datasets are read by Gluon's DataLoader (`mgbench.frameworks.gluon.data`), a whole global
batch at a time, split over the devices as the other frameworks' processes shard it; the net's
head follows the dataset's labels. Input is unstaged: `split_and_load` copies each device's slice
when the step takes the batch.

Without GPUs, N `mx.cpu(i)` contexts stand in for N devices in one process (they share the
host's cores). MXNet 1.9.1 from PyPI is a CPU build; GPU runs need a CUDA build of MXNet.

The models (`models.py`) are torchvision's architectures in `gluon.nn` (Inception-v3 the model
zoo's); `--init` sets their starting weights and the job's batch-norm settings (`weights.py`).
A transformer's attention is MXNet's own operators on every device; the row names them
(`transformer.SelfAttention.KERNEL`).
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon

from mgbench.core.config import RunConfig
from mgbench.core.errors import UsageError
from mgbench.datasets.resolve import task_for
from mgbench.datasets.synthetic import Shard, held_out_batch, placed_batches, synthetic_pool
from mgbench.frameworks.gluon import models, transformer, weights
from mgbench.frameworks.gluon.data import build_loaders
from mgbench.frameworks.gluon.sgd import build_optimizer
from mgbench.measure.metrics import gathered_metrics
from mgbench.training.protocol import Adapter, ModelInfo, Placement

KVSTORES = {"device": "device", "nccl": "nccl"}


class GluonAdapter(Adapter):
    def setup(self, config: RunConfig) -> ModelInfo:
        self.accept(config)
        self.contexts = self._contexts(config)
        mx.random.seed(config.job.seed)
        self.dataset, spec = task_for(config.job)
        net = models.build_model(spec, config.job.input_size, config.job.data_format)
        weights.set_batch_norm(net, spec.hyperparameters)
        net.initialize(mx.init.Xavier(rnd_type="gaussian", factor_type="in", magnitude=2), ctx=self.contexts)
        size = config.job.input_size
        net(mx.nd.zeros((1, 3, size, size), ctx=self.contexts[0]))
        digest = config.job.start_from(spec, partial(weights.load_initial, net))
        net.hybridize(static_alloc=True, static_shape=True)
        self.net = net
        self.loss_fn = models.build_loss(spec)
        self.trainer = gluon.Trainer(
            models.trainable(net),
            build_optimizer(spec.optimization.optimizer, config.job.learning_rate),
            kvstore=KVSTORES[self.strategy],
        )
        self._losses: list[mx.nd.NDArray] = []
        if self.dataset is not None:
            self.loaders = build_loaders(self.dataset, config)
        parameters = sum(p.data(self.contexts[0]).size for p in models.trainable(net).values())
        return ModelInfo(parameters=parameters, init_digest=digest, attention_kernel=transformer.attention_kernel(net))

    def _contexts(self, config: RunConfig) -> list[mx.Context]:
        if self.use_cuda:
            visible = mx.context.num_gpus()
            if config.devices > visible:
                raise UsageError(f"{config.devices} GPUs asked for, this MXNet build sees {visible}")
            contexts = [mx.gpu(i) for i in range(config.devices)]
        else:
            contexts = [mx.cpu(i) for i in range(config.devices)]
        self._placement = Placement(rank=0, world_size=1, device_names=[str(c) for c in contexts])
        return contexts

    def _host_arrays(self, batch: tuple[np.ndarray, np.ndarray]) -> tuple[mx.nd.NDArray, mx.nd.NDArray]:
        images, labels = batch
        return mx.nd.array(images), mx.nd.array(labels.astype(np.float32))

    def _split(self, batch: tuple[mx.nd.NDArray, mx.nd.NDArray]) -> tuple[list, list]:
        """Each device's slice of the batch, on that device (the last held-out batch may be
        smaller than the others, and than the device count)."""
        images, labels = batch
        contexts = self.contexts[: len(images)]
        labels = labels.astype(np.float32)
        return tuple(gluon.utils.split_and_load(x, contexts, even_split=False) for x in (images, labels))

    def _global_shard(self) -> Shard:
        return Shard(0, self.config.global_batch)

    def batches(self) -> Iterator[Any]:
        if self.dataset is not None:
            return (self._split(batch) for batch in self.loaders.train.endless())
        pool = synthetic_pool(
            self.config.job.spec, self.config.job.input_size, self._global_shard(), self.config.job.seed
        )
        host = [self._host_arrays(batch) for batch in pool]
        return placed_batches(host, self._split, resident=self.config.job.data_on_device or not self.use_cuda)

    def steps_per_epoch(self) -> int:
        return len(self.loaders.train)

    def epoch_batches(self, epoch: int) -> Iterator[Any]:
        return (self._split(batch) for batch in self.loaders.train.epoch(epoch))

    def set_learning_rate(self, learning_rate: float) -> None:
        self.trainer.set_learning_rate(learning_rate)

    def train_step(self, batch: tuple[list, list]) -> None:
        images, labels = batch
        with autograd.record():
            losses = [self.loss_fn(self.net(x), y) for x, y in zip(images, labels)]
        autograd.backward(losses)
        self.trainer.step(self.config.global_batch)
        self._losses = losses

    def synchronize(self) -> None:
        mx.nd.waitall()

    def _mean(self, losses: list[mx.nd.NDArray]) -> float:
        """Mean over the global batch from one scalar per device."""
        return sum(float(loss.sum().asscalar()) for loss in losses) / self.config.global_batch

    def last_loss(self) -> float:
        return self._mean(self._losses)

    def evaluate(self, split: str = "val") -> dict[str, float]:
        if self.dataset is not None:
            return self._score(split)
        batch = held_out_batch(
            self.config.job.spec, self.config.job.input_size, self._global_shard(), self.config.job.seed + 1
        )
        images, labels = self._split(self._host_arrays(batch))
        return {"loss": self._mean([self.loss_fn(self.net(x), y) for x, y in zip(images, labels)])}

    def _score(self, split: str) -> dict[str, float]:
        """Loss and `split_metrics` over the whole held-out `split`, each device scoring its slices."""
        scores, targets, loss_sum = [], [], 0.0
        for batch in self.loaders.held_out[split]:
            for x, y in zip(*self._split(batch)):
                logits = self.net(x)
                loss_sum += float(self.loss_fn(logits, y).sum().asscalar())
                probabilities = logits.sigmoid() if self.dataset.multi_label else logits.softmax(axis=1)
                scores.append(probabilities.asnumpy())
            targets.append(batch[1].asnumpy())
        return gathered_metrics([(loss_sum, np.concatenate(scores), np.concatenate(targets))], self.dataset.multi_label)

    def framework_versions(self) -> dict[str, str]:
        features = mx.runtime.Features()
        versions = {"mxnet": mx.__version__, "numpy": np.__version__, "kvstore": KVSTORES[self.strategy]}
        if self.use_cuda:
            versions["cudnn"] = "enabled" if features.is_enabled("CUDNN") else "not in this build"
            versions["nccl"] = "enabled" if features.is_enabled("NCCL") else "not in this build"
        return versions

    def save_state(self, path: Path) -> None:
        arrays = {name: p.data(self.contexts[0]).asnumpy() for name, p in models.trainable(self.net).items()}
        np.savez(path, **arrays)

    def close(self) -> None:
        mx.nd.waitall()


def create_adapter(strategy: str) -> GluonAdapter:
    return GluonAdapter(strategy)
