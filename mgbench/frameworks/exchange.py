"""How a data-parallel strategy hands its gradients to the all-reduce (`Exchange`) and which
process does each device's host work (`Dispatch`): declared per strategy in its framework's
`spec.py` (`StrategySpec.exchange`, `StrategySpec.dispatch`), read by the scaling projection
(`mgbench.projection`), which prices each bucket's all-reduce and each process's host work.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

DDP_BUCKET_BYTES = 25 * 2**20
"""PyTorch DDP's default `bucket_cap_mb`."""
XLA_COMBINE_THRESHOLD_BYTES = 30 * 2**20 + 7
"""XLA's `kDefaultAllReduceCombineThreshold` (`xla/service/collective_utils.h`), the default of
`--xla_gpu_all_reduce_combine_threshold_bytes`."""


@dataclass(frozen=True)
class Exchange:
    """How a data-parallel strategy hands its gradients to the all-reduce: in buckets of up to
    `bucket_bytes` (and at most `tensors_per_bucket` tensors where the framework caps that), one
    all-reduce each, beside the backward pass (`overlapped`) or after it."""

    name: str
    bucket_bytes: float
    overlapped: bool
    source: str
    """What the figures are: the framework's default and where it is set."""
    tensors_per_bucket: int | None = None

    def buckets(self, gradient_bytes: float, tensors: int | None) -> list[float]:
        """Bytes of each all-reduce: full buckets and the remainder; where more tensors than
        `tensors_per_bucket` allows would share them, as many buckets as the tensors need, of
        equal bytes (tensors None: not known, the bytes alone decide)."""
        full, rest = divmod(gradient_bytes, self.bucket_bytes)
        by_bytes = [self.bucket_bytes] * int(full) + ([rest] if rest else [])
        by_count = math.ceil(tensors / self.tensors_per_bucket) if tensors and self.tensors_per_bucket else 0
        return [gradient_bytes / by_count] * by_count if by_count > len(by_bytes) else by_bytes

    def describe(self) -> str:
        limit = f", {self.tensors_per_bucket} tensors" if self.tensors_per_bucket else ""
        timing = "beside the backward" if self.overlapped else "after the backward"
        return f"{self.name} (up to {self.bucket_bytes / 2**20:.0f} MiB{limit}, {timing})"


DDP_EXCHANGE = Exchange(
    "DDP buckets",
    DDP_BUCKET_BYTES,
    overlapped=True,
    source="PyTorch DistributedDataParallel: bucket_cap_mb 25, each bucket all-reduced as soon as the backward fills it",
)
FSDP2_EXCHANGE = Exchange(
    "FSDP2 units",
    DDP_BUCKET_BYTES,
    overlapped=True,
    source="PyTorch FSDP2 (fully_shard): one all-gather and one reduce-scatter per unit the model names "
    "(a GPT-2 block; a model that names none is one unit), the next unit's gathered while one computes; "
    "a unit's bytes are the model's own (gpt2's blocks about 27 MiB), priced in DDP's 25 MiB buckets",
)
HOROVOD_EXCHANGE = Exchange(
    "Horovod fusion buffer",
    64 * 2**20,
    overlapped=True,
    source="Horovod: HOROVOD_FUSION_THRESHOLD 64 MiB, gradients fused as the backward hands them over",
)
XLA_EXCHANGE = Exchange(
    "XLA combined all-reduces",
    XLA_COMBINE_THRESHOLD_BYTES,
    overlapped=False,
    source="XLA on GPU: one all-reduce per gradient tensor, combined by AllReduceCombiner up to "
    "xla_gpu_all_reduce_combine_threshold_bytes (30 MiB) and 256 tensors; with the latency-hiding "
    "scheduler off (xla_gpu_enable_latency_hiding_scheduler's default) nothing prices hiding them",
    tensors_per_bucket=256,
)


@dataclass(frozen=True)
class Dispatch:
    """Which process does a device's host work each step (launching its step, copying its batch,
    handling its buffers): a process of its own, beside the other devices' (`one_per_node`
    False), or one process for every device of its node, in turn."""

    name: str
    one_per_node: bool
    source: str
    """How the strategy starts its processes, and where that is set."""

    def devices_in_turn(self, devices: int, nodes: int) -> int:
        """How many devices' host work one process does each step."""
        return devices // nodes if self.one_per_node else 1

    def describe(self) -> str:
        return f"{self.name} ({'each device in turn' if self.one_per_node else 'each beside the others'})"


PROCESS_PER_DEVICE = Dispatch(
    "a process per device",
    one_per_node=False,
    source="torchrun, horovodrun and mpirun start one process per device (the default where a strategy declares none)",
)
ONE_PROCESS_PER_NODE = Dispatch(
    "one process for a node's devices",
    one_per_node=True,
    source="JAX: one Python process drives every local device (jax.shard_map or keras.distribution over "
    "jax.local_devices()); it shards every device's batch, launches every device's executable and handles "
    "every device's buffers; across nodes, one process per node (jax.distributed)",
)
