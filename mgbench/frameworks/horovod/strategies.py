"""Horovod's strategy over PyTorch: `hvd`, the process placement and gradient exchange the
Horovod adapter asks its strategy object for (as the PyTorch adapter asks `pytorch.strategies`).

- Process placement comes from `hvd.rank()`/`hvd.size()`; each process drives the GPU of its
  `hvd.local_rank()` (the CPU where there is none).
- `hvd.DistributedOptimizer` starts an all-reduce (average) of each gradient as backward produces
  it; the step waits for them (`synchronize`) before updating.
- Rank 0's initial parameters are broadcast, so every process starts equal whatever its seed.
  The optimizer's state is not: torch's optimizers make theirs at their first step, so every
  process starts with the same empty one, and Horovod's `broadcast_optimizer_state` would make it
  by stepping the optimizer once on zero gradients, which moves AdamW's weights (its decay) and
  counts a step in its moments' bias correction: a first step other than the other strategies'.
- Horovod's collectives take contiguous tensors only: a channels_last gradient travels as a
  contiguous view of its own memory and keeps its weight's layout (`exchange.py`); the weights
  are broadcast once, as contiguous copies.
- With fp16 the gradients are synchronised before the loss scaler unscales and checks them, then
  the scaler steps without a second synchronisation (Horovod's documented AMP recipe).
"""

from __future__ import annotations

from typing import Any

import horovod.torch as hvd
import torch
from torch import nn

from mgbench.core.config import RunConfig
from mgbench.core.errors import UsageError
from mgbench.frameworks.horovod.exchange import InPlaceLayout
from mgbench.frameworks.pytorch.strategies import Joined, TorchStrategy


def broadcast_from_first_rank(state: dict[str, torch.Tensor]) -> None:
    """Rank 0's parameters and buffers to every rank, in place, whatever their memory format."""
    contiguous = {name: tensor.contiguous() for name, tensor in state.items()}
    hvd.broadcast_parameters(contiguous, root_rank=0)
    for name, tensor in state.items():
        if contiguous[name].data_ptr() != tensor.data_ptr():
            tensor.copy_(contiguous[name])


class Horovod(TorchStrategy):
    """`hvd`: Horovod's DistributedOptimizer over the PyTorch adapter's model and data."""

    def join(self, config: RunConfig, use_cuda: bool) -> Joined:
        hvd.init()
        rank, world = hvd.rank(), hvd.size()
        if world != config.devices:
            raise UsageError(f"hvd was launched with {world} processes for {config.devices} devices")
        if use_cuda and not hvd.nccl_built():
            raise UsageError(
                "this Horovod was built without NCCL and cannot all-reduce CUDA tensors: "
                "rebuild it with HOROVOD_GPU_OPERATIONS=NCCL (scripts/build_horovod.sh)"
            )
        return Joined(rank, world, [torch.device("cuda", hvd.local_rank()) if use_cuda else torch.device("cpu")])

    def wrap(self, model: nn.Module, criterion: nn.Module, devices: list[torch.device]) -> nn.Module:
        broadcast_from_first_rank(model.state_dict())
        return model

    def distribute_optimizer(self, optimizer: torch.optim.Optimizer, model: nn.Module) -> torch.optim.Optimizer:
        return hvd.DistributedOptimizer(
            optimizer, named_parameters=model.named_parameters(), op=hvd.Average, compression=InPlaceLayout
        )

    def apply_gradients(self, optimizer: torch.optim.Optimizer, scaler: torch.amp.GradScaler) -> None:
        optimizer.synchronize()
        scaler.unscale_(optimizer)
        with optimizer.skip_synchronize():
            scaler.step(optimizer)
        scaler.update()

    def average(self, value: torch.Tensor) -> torch.Tensor:
        return hvd.allreduce(value.detach(), op=hvd.Average)

    def gather(self, local: Any) -> list[Any]:
        return hvd.allgather_object(local)

    def close(self) -> None:
        hvd.shutdown()
