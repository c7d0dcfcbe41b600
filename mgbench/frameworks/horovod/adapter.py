"""Horovod adapter over PyTorch: one process per device under `horovodrun` (NCCL on GPU, gloo on CPU).

Everything but the gradient exchange is the PyTorch adapter's (the models of `pytorch.models`,
the loader of `pytorch.data`, autocast and prefetching), so a difference between `pytorch/ddp`
and `horovod/hvd` is Horovod's (`strategies.py`): its background thread negotiating which
tensors are ready, fusing them into a buffer and all-reducing them, against DDP's buckets.
Horovod's tuning knobs are environment variables read by every rank; those set are named on the
row (`horovod_settings`), so a row run with other settings says so.
"""

from __future__ import annotations

import os

import horovod
import horovod.torch as hvd

from mgbench.frameworks.horovod.strategies import Horovod
from mgbench.frameworks.pytorch.adapter import TorchAdapter

TUNING = frozenset(
    {
        "HOROVOD_CYCLE_TIME",
        "HOROVOD_FUSION_THRESHOLD",
        "HOROVOD_CACHE_CAPACITY",
        "HOROVOD_AUTOTUNE",
        "HOROVOD_HIERARCHICAL_ALLREDUCE",
        "HOROVOD_NUM_NCCL_STREAMS",
        "HOROVOD_BATCH_D2D_MEMCOPIES",
        "HOROVOD_ENABLE_ASYNC_COMPLETION",
        "HOROVOD_DISABLE_GROUP_FUSION",
    }
)
"""Horovod's performance settings (tensor fusion, response cache, autotune, NCCL, completion)."""


class HorovodAdapter(TorchAdapter):
    def framework_versions(self) -> dict[str, str]:
        controller = "gloo" if hvd.gloo_enabled() else "mpi"
        allreduce = "nccl" if self.use_cuda and hvd.nccl_built() else controller
        settings = " ".join(f"{name}={value}" for name, value in sorted(os.environ.items()) if name in TUNING)
        return {
            **super().framework_versions(),
            "horovod": horovod.__version__,
            "horovod_allreduce": allreduce,
            "horovod_settings": settings or "Horovod's defaults",
        }


def create_adapter(strategy: str) -> HorovodAdapter:
    return HorovodAdapter(strategy, Horovod())
