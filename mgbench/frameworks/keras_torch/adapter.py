"""Keras 3 adapter over PyTorch: the Keras model in DistributedDataParallel, one process per device.

Keras' torch backend has no `keras.distribution`, and `fit` runs on one device. A Keras model
under this backend is a `torch.nn.Module` whose variables are torch parameters, so Keras'
own guide to multi-GPU training with PyTorch wraps it in `DistributedDataParallel` under one
process per device and drives it with a custom loop. That is this adapter: the same job as
the other Keras adapters (the catalogue models, loss and mixed-precision policy of
`models.py`), with the process group, placement, pinned-memory feed, synchronisation and
memory reading of the PyTorch adapter's `ddp` strategy, so what separates the two is the model
code (Keras layers over torch operators against torchvision's modules) and Keras' loss.

The optimizer is the PyTorch adapter's (`pytorch.models.build_optimizer`: `torch.optim.SGD` for
the image models) over the Keras model's parameters, not `keras.optimizers.SGD`: fp16 loss scaling is then `torch.amp.GradScaler`, which steps torch
optimizers only, and the update is the one the PyTorch adapter runs, in the momentum form every
framework steps in (`keras.models.TorchFormSGD` gives the other Keras adapters the same).

Batch-norm moving statistics are Keras variables that take no gradient, so DDP leaves them
alone: each process keeps those of its own shards (they enter no training step, only
`evaluate`).

Input: `ddp` is staged (on GPUs each batch is copied from pinned memory on a side stream one
step ahead, PyTorch's `DevicePrefetcher`); `ddp-unstaged` copies it with a plain `.to(device)`
when the step takes it. Real data (`--dataset`) is read by `keras.utils.PyDataset` with worker
processes (`data.py`), this rank's shard of each global batch as uint8 pixels, normalised on
the device as the PyTorch adapter does (`placed_images`) and handed to Keras in its data format.
With `--decode gpu` on a JPEG dataset the workers hand over the files' bytes and windows
instead, and PyTorch's device decoding places them (`pytorch/device_decode.py`: decoded and
cropped on the device, one step ahead on a side stream when staged); `pytorch/data.py`'s
`decoding_at` builds the placement for where the loader decodes, as PyTorch's own loader's.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import keras
import numpy as np
import torch

from mgbench.core.config import RunConfig
from mgbench.frameworks.keras import data
from mgbench.frameworks.keras import models as keras_models
from mgbench.frameworks.keras import weights as keras_weights
from mgbench.frameworks.keras_torch import attention
from mgbench.frameworks.keras_torch.spec import FRAMEWORK
from mgbench.frameworks.pytorch import models as torch_models
from mgbench.frameworks.pytorch.adapter import TorchProcessAdapter
from mgbench.frameworks.pytorch.compiling import compiled
from mgbench.frameworks.pytorch.data import DevicePrefetcher, PlacedPixels, PlacedTokens, decoding_at
from mgbench.frameworks.pytorch.strategies import DistributedDataParallel
from mgbench.measure.metrics import language_model_metrics
from mgbench.training.loaders import loader_workers
from mgbench.training.prefetch import Ahead
from mgbench.training.protocol import ModelInfo

Batch = tuple[torch.Tensor, torch.Tensor]


class KerasTorchAdapter(TorchProcessAdapter):
    """`ddp`: Keras 3 model, PyTorch DistributedDataParallel, custom loop. What does not touch
    the model (process group, shards, placement, synchronisation, memory, the torch.profiler
    window) is `TorchProcessAdapter`'s, shared with the PyTorch adapter; inheriting `TorchAdapter`
    would also bring its real-data loader, which keras-torch does not declare."""

    channels_last = False
    """The torch memory format `placed_images` gives a batch: the contiguous one for synthetic
    batches, which the pool holds in Keras' logical layout (NHWC for channels_last; its torch
    backend lays them out for the convolutions itself). Real data's uint8 NHWC pixels come out
    of `placed_images` as NCHW, in channels_last memory for channels_last, so that `keras_layout`
    turns them into NHWC without a copy."""

    def __init__(self, strategy: str):
        super().__init__(strategy)
        self.staged = FRAMEWORK.strategy(strategy).staged
        # PyTorch's `ddp` strategy object: the process group (world size checked against the
        # devices, LOCAL_RANK's device), the DDP wrapper, the update, the mean over the ranks.
        self.parallel = DistributedDataParallel()

    def setup(self, config: RunConfig) -> ModelInfo:
        """Join the group, then build the model on this process's device with every rank's
        seed equal (DDP also broadcasts rank 0's weights when it wraps the model)."""
        keras_models.require_backend("keras-torch", "torch")
        self._start(config)
        self.real, self.spec = data.keras_task(config, loader_workers(config.job.workers, self._placement.world_size))
        images = isinstance(self.real, data.RealData)
        self.channels_last = images and config.job.data_format.channels_last
        self.decoding = (
            decoding_at(self.real.site, config.job.input_size, self.device, self.channels_last) if images else None
        )
        # Keras creates variables on its default device: "cuda" is the current device, which
        # `_join_devices` set to this rank's; a CPU run names "cpu" (`torch_variables`).
        self.model, digest = keras_weights.started_model(self.spec, config)
        self.loss_fn = keras_models.build_loss(self.spec)
        # `--compile`: torch.compile of the DDP module, as the PyTorch adapter compiles its own.
        self.replicated = compiled(self.parallel.wrap(self.model, self.loss_fn, self.devices), config.job.compile)
        # The torch parameters behind Keras' trainable variables: those DDP all-reduces.
        trainable = [variable.value for variable in self.model.trainable_variables]
        self.optimizer = torch_models.build_optimizer(
            trainable, config.job.learning_rate, self.spec.optimization.optimizer
        )
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=config.job.precision == "fp16")
        self._loss = torch.zeros((), device=self.device)
        return ModelInfo(
            parameters=keras_models.trainable_parameters(self.model),
            init_digest=digest,
            attention_kernel=attention.attention_kernel(
                self.spec, config.job.input_size, config.job.batch_per_device, self.device, config.job.precision
            ),
            decoder=self.decoding.decoder if self.decoding else None,
        )

    def batches(self) -> Iterator[Batch]:
        """This rank's shard of each batch: of the loader's endless stream on real data; of the
        synthetic pool resident on CPU or with `--data-on-device`, else cycled from host memory
        (pinned and copied one step ahead on a side stream when staged)."""
        if self.real is not None:
            return self._fed(self.real.train(self._shard(), None))
        host = [self._to_tensors(batch) for batch in data.synthetic_pool_of(self.config, self._shard())]
        if self.config.job.data_on_device or not self.use_cuda:
            return itertools.cycle([self._to_device(batch) for batch in host])
        if not self.staged:
            return (self._to_device(batch) for batch in itertools.cycle(host))
        pinned = [(images.pin_memory(), labels.pin_memory()) for images, labels in host]
        return DevicePrefetcher(itertools.cycle(pinned), PlacedPixels(self.device, self.channels_last))

    def _fed(self, host: Iterator[data.LoadedBatch]) -> Iterator[Batch]:
        """Loader batches on the device in Keras' layout, placed as `decoding` places them (pixels
        copied, or files decoded there; a token stream's windows copied as they are): staged on
        GPUs, pinned on a thread of their own (as torch's DataLoader pins) and placed one step
        ahead on a side stream; else placed when the step takes them."""
        tensors = (as_tensors(batch) for batch in host)
        place = self.decoding.place if self.decoding else PlacedTokens(self.device)
        if self.use_cuda and self.staged:
            placed = place.staged(Ahead(tuple(part.pin_memory() for part in batch) for batch in tensors))
        else:
            placed = (place(batch) for batch in tensors)
        return ((self.keras_layout(images), labels) for images, labels in placed)

    def keras_layout(self, images: torch.Tensor) -> torch.Tensor:
        """A placed real-data batch (NCHW) in the layout of Keras' data format."""
        return images.permute(0, 2, 3, 1) if self.channels_last else images

    def steps_per_epoch(self) -> int:
        return self.real.steps_per_epoch()

    def epoch_batches(self, epoch: int) -> Iterator[Batch]:
        return self._fed(self.real.train(self._shard(), epoch))

    def step_loss(self, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Forward through DDP in training mode (batch-norm on the batch's statistics), the loss
        in float32 over this shard."""
        return self.loss_fn(labels, self.replicated(images, training=True))

    def evaluate(self, split: str = "val") -> dict[str, float]:
        """A language model's loss per token and perplexity over this rank's shard of each held-out
        batch (a stream's fixed windows of `split`, or the held-out synthetic batch:
        `data.held_out_windows`), averaged over ranks; an image model's loss and AUC over every
        image of `split` on real data (each rank scores its share, the logits are gathered), else
        its loss on this rank's shard of the held-out batch, averaged over ranks. In inference mode."""
        with torch.no_grad():
            if self.spec.language_model is not None:
                windows = data.held_out_windows(self.config, self.real, split, self._shard())
                losses = [self._held_out_loss(batch) for batch in windows]
                return language_model_metrics(self.parallel.global_mean(torch.stack(losses).mean()))
            if self.real is not None:
                return self._score(split)
            return {
                "loss": self.parallel.global_mean(self._held_out_loss(data.held_out_of(self.config, self._shard())))
            }

    def _held_out_loss(self, batch: data.SyntheticBatch) -> torch.Tensor:
        """The loss on a host batch of held-out samples, in inference mode."""
        inputs, targets = self._to_device(self._to_tensors(batch))
        return self.loss_fn(targets, self.model(inputs, training=False))

    def _score(self, split: str) -> dict[str, float]:
        rank, world = self._placement.rank, self._placement.world_size
        logits, targets = [], []
        for batch in self.real.evaluation(split, rank, world, self.config.job.batch_per_device):
            images, _ = self.decoding.place(as_tensors(batch))
            logits.append(self.model(self.keras_layout(images), training=False).float().cpu().numpy())
            targets.append(batch[-1])
        shards = self.parallel.gather((np.concatenate(logits), np.concatenate(targets)))
        return self.real.metrics(*(np.concatenate(part) for part in zip(*shards)))

    def framework_versions(self) -> dict[str, str]:
        return {"keras": keras.__version__, **super().framework_versions()}

    def save_state(self, path: Path) -> None:
        keras_models.save_trainable_weights(self.model, path)


def as_tensors(batch: data.LoadedBatch) -> tuple[torch.Tensor, ...]:
    """A loader's numpy batch as the host tensors torch's placements take, sharing the arrays."""
    return tuple(torch.from_numpy(part) for part in batch)


def create_adapter(strategy: str) -> KerasTorchAdapter:
    return KerasTorchAdapter(strategy)
