"""Horovod adapter over PyTorch: one process per device under `horovodrun` (NCCL on GPU, gloo on CPU).

Everything but the gradient exchange is the PyTorch adapter's (same models, data, autocast and
prefetching), so a difference between `pytorch/ddp` and `horovod/hvd` is Horovod's: its
background thread negotiating which tensors are ready, fusing them into a buffer and
all-reducing them, against DDP's buckets.

- Process placement comes from `hvd.rank()`/`hvd.size()`; each process drives the GPU of its
  `hvd.local_rank()` (the CPU where there is none).
- `hvd.DistributedOptimizer` starts an all-reduce (average) of each gradient as backward produces
  it; the step waits for them (`synchronize`) before updating.
- Rank 0's initial parameters and optimizer state are broadcast, so every process starts equal
  whatever its seed.
- With fp16 the gradients are synchronised before the loss scaler unscales and checks them, then
  the scaler steps without a second synchronisation (Horovod's documented AMP recipe).
"""

from __future__ import annotations

import horovod
import horovod.torch as hvd
import torch
from torch import nn

from mgbench.common.config import RunConfig
from mgbench.common.errors import UsageError
from mgbench.common.protocol import Placement
from mgbench.frameworks.torch.adapter import Autocasting, TorchTrainer


class HorovodTrainer(TorchTrainer):

    def _join_devices(self, config: RunConfig) -> list[torch.device]:
        hvd.init()
        rank, world = hvd.rank(), hvd.size()
        if world != config.devices:
            raise UsageError(f"hvd was launched with {world} processes for {config.devices} devices")
        if self.use_cuda:
            device = torch.device("cuda", hvd.local_rank())
            torch.cuda.set_device(device)
            names = [torch.cuda.get_device_name(device)]
        else:
            device = torch.device("cpu")
            names = [f"cpu ({torch.get_num_threads()} threads)"]
        self._placement = Placement(rank=rank, world_size=world, device_names=names)
        return [device]

    def _parallelize(self, casting: Autocasting) -> nn.Module:
        hvd.broadcast_parameters(casting.state_dict(), root_rank=0)
        return casting

    def _distribute_optimizer(self, optimizer: torch.optim.Optimizer) -> torch.optim.Optimizer:
        distributed = hvd.DistributedOptimizer(
            optimizer, named_parameters=self.core.named_parameters(), op=hvd.Average
        )
        hvd.broadcast_optimizer_state(distributed, root_rank=0)
        return distributed

    def _apply_gradients(self) -> None:
        self.optimizer.synchronize()
        self.scaler.unscale_(self.optimizer)
        with self.optimizer.skip_synchronize():
            self.scaler.step(self.optimizer)
        self.scaler.update()

    def _global_mean(self, value: torch.Tensor) -> float:
        return float(hvd.allreduce(value.detach(), op=hvd.Average).item())

    def framework_versions(self) -> dict[str, str]:
        controller = "gloo" if hvd.gloo_enabled() else "mpi"
        allreduce = "nccl" if self.use_cuda and hvd.nccl_built() else controller
        return {**super().framework_versions(), "horovod": horovod.__version__, "horovod_allreduce": allreduce}

    def close(self) -> None:
        hvd.shutdown()


def create_trainer(strategy: str) -> HorovodTrainer:
    return HorovodTrainer(strategy)
