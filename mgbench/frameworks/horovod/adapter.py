"""Horovod adapter over PyTorch: one process per device under `horovodrun` (NCCL on GPU, gloo on CPU).

Everything but the gradient exchange is the PyTorch adapter's (the models of `pytorch.models`,
the loader of `pytorch.data`, autocast and prefetching), so a difference between `pytorch/ddp`
and `horovod/hvd` is Horovod's (`strategies.py`): its background thread negotiating which
tensors are ready, fusing them into a buffer and all-reducing them, against DDP's buckets.
"""

from __future__ import annotations

import horovod
import horovod.torch as hvd

from mgbench.frameworks.horovod.strategies import Horovod
from mgbench.frameworks.pytorch.adapter import TorchTrainer


class HorovodTrainer(TorchTrainer):
    def framework_versions(self) -> dict[str, str]:
        controller = "gloo" if hvd.gloo_enabled() else "mpi"
        allreduce = "nccl" if self.use_cuda and hvd.nccl_built() else controller
        return {**super().framework_versions(), "horovod": horovod.__version__, "horovod_allreduce": allreduce}


def create_trainer(strategy: str) -> HorovodTrainer:
    return HorovodTrainer(strategy, Horovod())
