"""One small object per PyTorch data-parallel strategy: how it places processes on devices,
wraps the model, computes the loss, exchanges gradients and metrics, and closes.

The adapter (`mgbench.frameworks.pytorch.adapter`) holds everything strategies share (model,
data, autocast, prefetching, evaluation) and asks its strategy object wherever they differ,
instead of comparing strategy names. Horovod's strategy lives beside its adapter.
"""

from __future__ import annotations

import os
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from mgbench.core.config import RunConfig
from mgbench.core.errors import UsageError


class Joined:
    """Where `join` put this process: its rank, the world size and the devices it drives."""

    def __init__(self, rank: int, world: int, devices: list[torch.device]):
        self.rank, self.world, self.devices = rank, world, devices


class LossComputingModule(nn.Module):
    """Model plus criterion in one forward: DataParallel then gathers a scalar per device."""

    def __init__(self, model: nn.Module, criterion: nn.Module):
        super().__init__()
        self.model = model
        self.criterion = criterion

    def forward(self, images: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return self.criterion(self.model(images).float(), targets).unsqueeze(0)


class TorchStrategy:
    """One process driving the devices it was given; what every strategy does unless it says otherwise."""

    replica_threads = False
    """True where replicas run in threads started anew every step: cuDNN's tuned plans are cached
    per thread, so autotuning would re-tune every convolution at every step."""

    def join(self, config: RunConfig, use_cuda: bool) -> Joined:
        if use_cuda and config.devices > torch.cuda.device_count():
            raise UsageError(f"{config.devices} devices asked for, torch sees {torch.cuda.device_count()}")
        count = config.devices if use_cuda else 1
        return Joined(0, 1, [torch.device("cuda", i) if use_cuda else torch.device("cpu") for i in range(count)])

    def wrap(self, model: nn.Module, criterion: nn.Module, devices: list[torch.device]) -> nn.Module:
        return model

    def loss(self, model: nn.Module, criterion: nn.Module, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return criterion(model(images).float(), labels)

    def distribute_optimizer(self, optimizer: torch.optim.Optimizer, model: nn.Module) -> torch.optim.Optimizer:
        """The optimizer the step uses; DDP and DataParallel exchange gradients in the model instead."""
        return optimizer

    def apply_gradients(self, optimizer: torch.optim.Optimizer, scaler: torch.amp.GradScaler) -> None:
        """Unscale (fp16), step and update the loss scale once backward has produced the gradients."""
        scaler.step(optimizer)
        scaler.update()

    def average(self, value: torch.Tensor) -> torch.Tensor:
        """`value` averaged over the processes, on its device (one process: itself)."""
        return value

    def global_mean(self, value: torch.Tensor) -> float:
        return float(self.average(value).item())

    def gather(self, local: Any) -> list[Any]:
        """Every process's `local` (validation shards), in rank order."""
        return [local]

    def close(self) -> None:
        """Leave whatever `join` joined."""


def device_ids(devices: list[torch.device]) -> list[int] | None:
    return [d.index for d in devices] if devices[0].type == "cuda" else None


class DistributedDataParallel(TorchStrategy):
    """`ddp`: one process per device under torchrun; gradients all-reduced in buckets during backward."""

    def join(self, config: RunConfig, use_cuda: bool) -> Joined:
        dist.init_process_group("nccl" if use_cuda else "gloo")
        rank, world = dist.get_rank(), dist.get_world_size()
        if world != config.devices:
            raise UsageError(f"ddp was launched with {world} processes for {config.devices} devices")
        local_rank = int(os.environ.get("LOCAL_RANK", rank))
        return Joined(rank, world, [torch.device("cuda", local_rank) if use_cuda else torch.device("cpu")])

    def wrap(self, model: nn.Module, criterion: nn.Module, devices: list[torch.device]) -> nn.Module:
        return nn.parallel.DistributedDataParallel(model, device_ids=device_ids(devices), gradient_as_bucket_view=True)

    def average(self, value: torch.Tensor) -> torch.Tensor:
        value = value.clone()
        dist.all_reduce(value)
        return value / dist.get_world_size()

    def gather(self, local: Any) -> list[Any]:
        shards: list[Any] = [None] * dist.get_world_size()
        dist.all_gather_object(shards, local)
        return shards

    def close(self) -> None:
        if dist.is_initialized():
            dist.destroy_process_group()


class DataParallel(TorchStrategy):
    """`dp`: nn.DataParallel scatters the batch, replicates the model every step, runs replicas
    in threads and gathers the outputs on device 0, where the loss is computed."""

    replica_threads = True

    def wrap(self, model: nn.Module, criterion: nn.Module, devices: list[torch.device]) -> nn.Module:
        return nn.DataParallel(model, device_ids=device_ids(devices))


class DataParallelLoss(DataParallel):
    """`dp-loss`: as `dp`, but the loss runs inside each replica on its share of the targets, so
    only one scalar per device is gathered instead of the whole output tensor."""

    def wrap(self, model: nn.Module, criterion: nn.Module, devices: list[torch.device]) -> nn.Module:
        return nn.DataParallel(LossComputingModule(model, criterion), device_ids=device_ids(devices))

    def loss(self, model: nn.Module, criterion: nn.Module, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return model(images, labels).mean()


STRATEGIES: dict[str, type[TorchStrategy]] = {
    "ddp": DistributedDataParallel,
    "dp": DataParallel,
    "dp-loss": DataParallelLoss,
}
