"""Chainer adapter: ChainerMN data parallelism, one MPI process per device under mpiexec.

- On GPU the `pure_nccl` communicator all-reduces gradients with NCCL; on CPU the `naive`
  communicator does it over MPI, so `--gpus N` without GPUs means N MPI processes sharing the
  host's cores.
- Every process computes the mean loss of its own shard; ChainerMN's multi-node optimizer
  averages the gradients over processes, which equals the gradient of the mean loss over the
  global batch because the shards are equal.
- The SGD steps in torch's form (`optimizer`), not Chainer's `MomentumSGD`, whose form drifts
  from torch's once the rate changes between steps, as it does every step of the warm-up.
- ChainerMN's multi-node optimizer spends its first `update()` broadcasting rank 0's weights
  instead of updating. `setup` does that broadcast itself and lets the optimizer record the
  parameter set, so every timed step is a real training step.

Every process builds the model, sets the job's batch-norm settings and, under `--init same` or a
weights file, loads the shared starting weights (`weights`) before that broadcast, so the
broadcast hands over what every rank already holds.

Real datasets are read by Chainer's MultiprocessIterator over the shared shards, scattered by
ChainerMN (`mgbench.frameworks.chainer.data`); the model's head follows the dataset's labels.
Input is unstaged: each batch is sent to the device when the step takes it.

A transformer's attention is unfused in Chainer; the row names the function nodes it runs and
where (`attention`), observed on the run's device after cuDNN is allowed or not.

Chainer is imported through `imports`, after `compat.apply()`, which lets Chainer 7.8.1 run on numpy 2
(needed by CuPy 14 on GPU machines); on numpy 1.23 it does nothing. `cupy_compat.apply()` then
lets ChainerMN's gradient-packing kernels compile on CuPy 14 (nothing without CuPy or on older
CuPy). CuPy 14 has no cuDNN module: Chainer then runs without cuDNN, and `framework_versions`
says so.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import mpi4py
import numpy as np
from mpi4py import MPI

from mgbench.core.config import RunConfig
from mgbench.core.errors import UsageError
from mgbench.datasets.resolve import task_for
from mgbench.datasets.synthetic import Shard, held_out_batch, placed_batches, synthetic_pool
from mgbench.frameworks.chainer import attention, cupy_compat, models, weights
from mgbench.frameworks.chainer.data import ChainerLoader
from mgbench.frameworks.chainer.imports import NUMPY_PATCHES, F, chainer, chainermn
from mgbench.frameworks.chainer.optimizer import build_optimizer
from mgbench.frameworks.memory import cap_bytes
from mgbench.measure.metrics import gathered_metrics
from mgbench.training.protocol import Adapter, ModelInfo, Placement

KERNEL_PATCHES = cupy_compat.apply()
COMMUNICATORS = {"cuda": "pure_nccl", "cpu": "naive"}


def cudnn_state() -> str:
    """Whether Chainer uses cuDNN, and why not when it does not."""
    cuda = chainer.backends.cuda
    if cuda.cudnn_enabled:
        return str(cuda.cuda.cudnn.getVersion())
    return f"not used ({getattr(cuda, '_resolution_error', None) or 'cuDNN disabled'})"


class ChainerAdapter(Adapter):
    def setup(self, config: RunConfig) -> ModelInfo:
        self.accept(config)
        self.comm = chainermn.create_communicator(COMMUNICATORS[config.job.device_kind])
        if self.comm.size != config.devices:
            raise UsageError(f"chainermn was launched with {self.comm.size} processes for {config.devices} devices")
        self.device = self._join_device()
        np.random.seed(config.job.seed)
        self.dataset, spec = task_for(config.job)
        self.model = models.build_model(spec, config.job.input_size, config.job.data_format)
        weights.set_batch_norm(self.model, spec.hyperparameters)
        digest = config.job.start_from(spec, partial(weights.load_initial, self.model))
        self.model.to_device(self.device)
        self.lossfun = models.build_loss(spec)
        optimizer = build_optimizer(config.job.learning_rate, spec.optimization.optimizer)
        self.optimizer = chainermn.create_multi_node_optimizer(optimizer, self.comm)
        self.optimizer.setup(self.model)
        self.comm.bcast_data(self.model)
        self.optimizer.is_changed(self.model)
        self._loss = 0.0
        if self.dataset is not None:
            self.loader = ChainerLoader(self.dataset, config, self.comm)
        return ModelInfo(
            parameters=models.parameter_count(self.model),
            init_digest=digest,
            attention_kernel=attention.attention_kernel(
                spec, config.job.input_size, config.job.batch_per_device, self.device
            ),
        )

    def _join_device(self) -> chainer.backend.Device:
        if self.use_cuda:
            device = chainer.get_device(f"@cupy:{self.comm.intra_rank}")
            device.use()
            chainer.global_config.use_cudnn = "auto" if chainer.backends.cuda.cudnn_enabled else "never"
            import cupy

            if (limit := cap_bytes(self.config)) is not None:
                cupy.get_default_memory_pool().set_limit(size=limit)  # `--gpu-memory-gb`, this device's pool
            name = cupy.cuda.runtime.getDeviceProperties(self.comm.intra_rank)["name"]
            names = [name.decode() if isinstance(name, bytes) else str(name)]
        else:
            device = chainer.get_device("@numpy")
            names = [f"cpu ({os.environ.get('OMP_NUM_THREADS', os.cpu_count())} threads)"]
        self._placement = Placement(rank=self.comm.rank, world_size=self.comm.size, device_names=names)
        return device

    def _shard(self) -> Shard:
        return Shard.of_rank(self._placement.rank, self._placement.world_size, self.config.global_batch)

    def _to_device(self, batch: tuple[np.ndarray, np.ndarray]) -> tuple[Any, Any]:
        images, labels = batch
        return self.device.send(images), self.device.send(labels.astype(np.int32))

    def batches(self) -> Iterator[Any]:
        if self.dataset is not None:
            return itertools.chain.from_iterable(self.epoch_batches(epoch) for epoch in itertools.count())
        pool = synthetic_pool(self.config.job.spec, self.config.job.input_size, self._shard(), self.config.job.seed)
        return placed_batches(pool, self._to_device, resident=self.config.job.data_on_device or not self.use_cuda)

    def steps_per_epoch(self) -> int:
        return self.loader.steps_per_epoch()

    def epoch_batches(self, epoch: int) -> Iterator[Any]:
        return (self._to_device(batch) for batch in self.loader.epoch(epoch))

    def set_learning_rate(self, learning_rate: float) -> None:
        self.optimizer.lr = learning_rate

    def train_step(self, batch: tuple[Any, Any]) -> None:
        images, labels = batch
        loss = self.lossfun(self.model(images), labels)
        self.model.cleargrads()
        loss.backward()
        self.optimizer.update()
        self._loss = loss.array

    def synchronize(self) -> None:
        if self.use_cuda:
            self.device.device.synchronize()

    def _global_mean(self, value: Any) -> float:
        return self.comm.allreduce_obj(float(value)) / self.comm.size

    def last_loss(self) -> float:
        return self._global_mean(self._loss)

    def evaluate(self, split: str = "val") -> dict[str, float]:
        with chainer.using_config("train", False), chainer.no_backprop_mode():
            if self.dataset is not None:
                return self._score(split)
            batch = held_out_batch(
                self.config.job.spec, self.config.job.input_size, self._shard(), self.config.job.seed + 1
            )
            images, labels = self._to_device(batch)
            loss = self.lossfun(self.model(images), labels)
        return {"loss": self._global_mean(loss.array)}

    def _score(self, split: str) -> dict[str, float]:
        """Loss and `split_metrics` over the whole held-out `split`: each process scores its part,
        rank 0 computes them from every part and hands them to all."""
        cpu = chainer.get_device("@numpy")
        scores, targets, loss_sum = [], [], 0.0
        for batch in self.loader.held_out(split):
            images, labels = self._to_device(batch)
            logits = self.model(images)
            loss_sum += float(self.lossfun(logits, labels).array) * len(batch[1])
            probabilities = F.sigmoid(logits) if self.dataset.multi_label else F.softmax(logits, axis=1)
            scores.append(cpu.send(probabilities.array))
            targets.append(batch[1])
        parts = self.comm.gather_obj((loss_sum, np.concatenate(scores), np.concatenate(targets)))
        metrics = gathered_metrics(parts, self.dataset.multi_label) if self.comm.rank == 0 else None
        return self.comm.bcast_obj(metrics)

    def framework_versions(self) -> dict[str, str]:
        versions = {
            "chainer": chainer.__version__,
            "numpy": np.__version__,
            "mpi4py": mpi4py.__version__,
            "mpi": MPI.Get_library_version().split("\x00")[0].splitlines()[0].strip(),
            "communicator": COMMUNICATORS[self.config.job.device_kind],
        }
        if NUMPY_PATCHES:
            versions["numpy_compat"] = "restored " + ", ".join(NUMPY_PATCHES)
        if self.use_cuda:
            import cupy

            versions["cupy"] = cupy.__version__
            versions["cudnn"] = cudnn_state()
            if KERNEL_PATCHES:
                versions["cupy_compat"] = ", ".join(KERNEL_PATCHES)
        return versions

    def save_state(self, path: Path) -> None:
        cpu = chainer.get_device("@numpy")
        arrays = {name.lstrip("/"): cpu.send(param.array) for name, param in self.model.namedparams()}
        np.savez(path, **arrays)

    def close(self) -> None:
        self.comm.mpi_comm.Barrier()


def create_adapter(strategy: str) -> ChainerAdapter:
    return ChainerAdapter(strategy)
