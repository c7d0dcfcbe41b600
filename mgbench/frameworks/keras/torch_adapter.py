"""Keras 3 adapter over PyTorch: the Keras model in DistributedDataParallel, one process per device.

Keras' torch backend has no `keras.distribution`, and `fit` runs on one device. A Keras model
under this backend is a `torch.nn.Module` whose variables are torch parameters, so Keras'
own guide to multi-GPU training with PyTorch wraps it in `DistributedDataParallel` under one
process per device and drives it with a custom loop. That is this adapter: the same job as
the other Keras adapters (the catalogue models, loss and mixed-precision policy of
`models.py`), with the process group, placement, pinned-memory feed, synchronisation and
memory reading of the PyTorch adapter's `ddp` strategy, so what separates the two is the model
code (Keras layers over torch operators against torchvision's modules) and Keras' loss.

The optimizer is `torch.optim.SGD` over the Keras model's parameters, not
`keras.optimizers.SGD`: fp16 loss scaling is then `torch.amp.GradScaler`, which steps torch
optimizers only, and the update is the one the PyTorch adapter runs. It is the same job:
Keras' momentum (m = 0.9 m - lr g; w += m) and torch's (b = 0.9 b + g; w -= lr b) give the
same weights at a constant learning rate.

Batch-norm moving statistics are Keras variables that take no gradient, so DDP leaves them
alone: each process keeps those of its own shards (they enter no training step, only
`evaluate`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import keras
import torch

from mgbench.common.config import MOMENTUM, RunConfig
from mgbench.common.errors import UsageError
from mgbench.common.protocol import ModelInfo
from mgbench.datasets.synthetic import held_out_batch, synthetic_pool
from mgbench.frameworks.keras import models as keras_models
from mgbench.frameworks.torch.adapter import DevicePrefetcher, TorchProcess
from mgbench.frameworks.torch.compiling import compiled
from mgbench.frameworks.torch.strategies import DistributedDataParallel

Batch = tuple[torch.Tensor, torch.Tensor]


class KerasTorchTrainer(TorchProcess):
    """`ddp`: Keras 3 model, PyTorch DistributedDataParallel, custom loop. What does not touch
    the model (process group, shards, placement, synchronisation, memory, the torch.profiler
    window) is `TorchProcess`'s, shared with the PyTorch adapter; inheriting `TorchTrainer`
    would also bring its real-data loader, which keras-torch does not declare."""

    channels_last = False
    """The torch memory format `placed_images` gives a batch: the contiguous one. Keras reads
    images in the logical layout of its data format (NHWC for channels_last, as the pool holds
    them); its torch backend lays them out for the convolutions itself."""

    def __init__(self, strategy: str):
        super().__init__(strategy)
        # PyTorch's `ddp` strategy object: the process group (world size checked against the
        # devices, LOCAL_RANK's device), the DDP wrapper, the update, the mean over the ranks.
        self.parallel = DistributedDataParallel()

    def setup(self, config: RunConfig) -> ModelInfo:
        """Join the group, then build the model on this process's device with every rank's
        seed equal (DDP also broadcasts rank 0's weights when it wraps the model)."""
        if keras.backend.backend() != "torch":
            raise UsageError(f"keras-torch needs KERAS_BACKEND=torch, Keras runs on {keras.backend.backend()}")
        self._start(config)
        self.nhwc = config.data_format == "channels_last"  # the pool's layout: Keras' data format
        keras.utils.set_random_seed(config.seed)
        keras_models.set_precision(config.precision)
        # Keras creates variables on its default device: "cuda" is the current device, which
        # `_join_devices` set to this rank's; a CPU run names "cpu" (`torch_variables`).
        self.model = keras_models.build_model(config.spec, config.input_size, config.data_format)
        self.loss_fn = keras_models.build_loss(config.spec)
        # `--compile`: torch.compile of the DDP module, as the PyTorch adapter compiles its own.
        self.replicated = compiled(self.parallel.wrap(self.model, self.loss_fn, self.devices), config.compile)
        # The torch parameters behind Keras' trainable variables: those DDP all-reduces.
        trainable = [variable.value for variable in self.model.trainable_variables]
        self.optimizer = torch.optim.SGD(trainable, lr=config.learning_rate, momentum=MOMENTUM)
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=config.precision == "fp16")
        self._loss = torch.zeros((), device=self.device)
        return ModelInfo(parameters=keras_models.trainable_parameters(self.model))

    def batches(self) -> Iterator[Batch]:
        """This rank's shard of each pool batch: resident on CPU or with `--data-on-device`,
        else cycled from pinned host memory and copied one step ahead on a side stream."""
        pool = synthetic_pool(self.config.spec, self.config.input_size, self._shard(), self.config.seed, self.nhwc)
        host = [self._to_tensors(batch) for batch in pool]
        if self.use_cuda and not self.config.data_on_device:
            pinned = [(images.pin_memory(), labels.pin_memory()) for images, labels in host]
            return DevicePrefetcher(itertools.cycle(pinned), self.device, self.channels_last)
        return itertools.cycle([self._to_device(batch) for batch in host])

    def step_loss(self, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Forward through DDP in training mode (batch-norm on the batch's statistics), the loss
        in float32 over this shard."""
        return self.loss_fn(labels, self.replicated(images, training=True))

    def evaluate(self) -> dict[str, float]:
        """Loss on this rank's shard of the held-out batch in inference mode, averaged over ranks."""
        batch = held_out_batch(self.config.spec, self.config.input_size, self._shard(), self.config.seed + 1, self.nhwc)
        images, labels = self._to_device(self._to_tensors(batch))
        with torch.no_grad():
            loss = self.loss_fn(labels, self.model(images, training=False))
        return {"loss": self.parallel.global_mean(loss)}

    def framework_versions(self) -> dict[str, str]:
        return {"keras": keras.__version__, **super().framework_versions()}

    def save_state(self, path: Path) -> None:
        keras_models.save_trainable_weights(self.model, path)


def create_trainer(strategy: str) -> KerasTorchTrainer:
    return KerasTorchTrainer(strategy)
