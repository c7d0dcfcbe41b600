"""What a framework declares about GPU memory, without importing it: how it says it ran out, the
batch it trains a model at by default where the job's default does not fit, and how it is held
to `--gpu-memory-gb`.

Each framework's `FrameworkSpec.memory` is a `DeviceMemory`. The orchestrator reads a failed
run's cause and log against its `out_of_memory` markers to tell an out-of-memory run (restarted
with half the batch) from a crash; planning reads `gpu_batches`; the run's environment gets
`cap.variables` and the adapter applies the rest of its cap (`GpuMemoryCap`) when it starts.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from mgbench.core.config import RunConfig
from mgbench.core.job import Job
from mgbench.machine.devices import nvml_devices, nvml_or_none, visible_gpus

GIB = 2**30


@dataclass(frozen=True)
class OutOfMemory:
    """How one library says an allocation on the device failed.

    `in_cause`: words that, in the exception line that ended a rank (`orchestrator.CauseLine`),
    mean it ran out of memory (`torch.OutOfMemoryError`, XLA's `RESOURCE_EXHAUSTED`).
    `in_log`: whole phrases only a failed allocation prints, found anywhere in a failed run's log,
    where a wrapper's exception line hides the library's own (Keras re-raises torch's error with
    its own first line, torch's text below it). A line that merely mentions memory (a peak, TF's
    allocator warning that it "ran out of memory trying to allocate" and carried on) matches neither.
    Matched without regard to case."""

    library: str
    in_cause: tuple[str, ...]
    in_log: tuple[str, ...] = ()


TORCH_OOM = OutOfMemory(
    "torch",
    ("OutOfMemoryError", "CUDA out of memory"),
    ("CUDA out of memory. Tried to allocate", "torch.OutOfMemoryError"),
)
XLA_OOM = OutOfMemory(
    "jax/xla",
    ("RESOURCE_EXHAUSTED", "Out of memory while trying to allocate"),
    ("RESOURCE_EXHAUSTED: Out of memory", "Out of memory while trying to allocate"),
)
TENSORFLOW_OOM = OutOfMemory(
    "tensorflow",
    ("ResourceExhaustedError", "OOM when allocating tensor"),
    ("OOM when allocating tensor", "ResourceExhaustedError"),
)
CUPY_OOM = OutOfMemory(
    "cupy",
    ("OutOfMemoryError", "Out of memory allocating"),
    ("cupy.cuda.memory.OutOfMemoryError", "Out of memory allocating"),
)
MXNET_OOM = OutOfMemory(
    "mxnet", ("cudaMalloc retry failed: out of memory", "out of memory"), ("cudaMalloc retry failed: out of memory",)
)
EVERY_OOM = (TORCH_OOM, XLA_OOM, TENSORFLOW_OOM, CUPY_OOM, MXNET_OOM)
"""Every library's markers: what a framework that declares none of its own is read against."""


@dataclass(frozen=True)
class GpuBatch:
    """A framework's own default batch per GPU for one model, where the job's default
    (`job.GPU_BATCH_PER_DEVICE`) does not fit an 80 GB GPU; `why` says what was measured."""

    batch_per_device: int
    why: str


@dataclass(frozen=True)
class GpuMemoryCap:
    """How a framework holds itself to `--gpu-memory-gb` (an 80 GB GPU standing in for a smaller
    one): `setting` names it, as rows and docs say it; `variables` gives, from the share of the
    device's memory allowed, what must be in its environment before it starts (JAX's
    `XLA_PYTHON_CLIENT_MEM_FRACTION`; None: its adapter sets the cap itself when it starts)."""

    setting: str
    variables: Callable[[float], dict[str, str]] | None = None


def xla_fraction(share: float) -> dict[str, str]:
    """JAX's cap: the share of each GPU its allocator may take, read when its backend starts
    (rounded down, so the cap is never passed)."""
    return {"XLA_PYTHON_CLIENT_MEM_FRACTION": f"{math.floor(share * 10_000) / 10_000:.4f}"}


def mxnet_reserve(share: float) -> dict[str, str]:
    """MXNet's cap: the percentage of each GPU its memory pool leaves to others (rounded up)."""
    return {"MXNET_GPU_MEM_POOL_RESERVE": str(math.ceil(100 * (1 - share)))}


TORCH_CAP = GpuMemoryCap("torch.cuda.set_per_process_memory_fraction")
XLA_CAP = GpuMemoryCap("XLA_PYTHON_CLIENT_MEM_FRACTION", xla_fraction)
TENSORFLOW_CAP = GpuMemoryCap("tf.config.set_logical_device_configuration(memory_limit=MiB)")
CUPY_CAP = GpuMemoryCap("cupy.get_default_memory_pool().set_limit(size=bytes)")
MXNET_CAP = GpuMemoryCap("MXNET_GPU_MEM_POOL_RESERVE", mxnet_reserve)


@dataclass(frozen=True)
class DeviceMemory:
    out_of_memory: tuple[OutOfMemory, ...] = EVERY_OOM
    gpu_batches: dict[str, GpuBatch] = field(default_factory=dict)
    """Model -> the framework's default batch per GPU where the job's default does not fit."""
    cap: GpuMemoryCap | None = None
    """How `--gpu-memory-gb` caps it (None: it cannot be capped here, and its rows say so)."""

    def ran_out(self, cause: str, log: str) -> bool:
        """Whether a failed run ran out of device memory: its cause line (the exception that ended
        the failing rank) says so, or its log holds a phrase only a failed allocation prints."""
        cause, log = cause.lower(), log.lower()
        return any(
            any(word.lower() in cause for word in marker.in_cause) or any(p.lower() in log for p in marker.in_log)
            for marker in self.out_of_memory
        )

    def gpu_batch(self, job: Job) -> GpuBatch | None:
        """The framework's own default batch for `job`'s model where it applies: a GPU job whose
        batch is the default (`Job.batch_default`)."""
        own = self.gpu_batches.get(job.model)
        if own is None or not (job.batch_default and job.device_kind.on_gpu):
            return None
        return own

    def cap_variables(self, config: RunConfig) -> dict[str, str]:
        """What the run's environment needs for `--gpu-memory-gb` (nothing without it, or where the
        cap is at or above the devices' memory)."""
        if self.cap is None or self.cap.variables is None:
            return {}
        share = memory_share(config)
        return {} if share is None else self.cap.variables(share)


def cap_bytes(config: RunConfig) -> int | None:
    """`--gpu-memory-gb` in bytes (None: no cap, or CPU devices)."""
    limit = config.job.gpu_memory_gb
    if limit is None or not config.job.device_kind.on_gpu:
        return None
    return int(limit * GIB)


def share_of(limit_bytes: int, total_bytes: int) -> float | None:
    """The share of a device's memory a cap allows (None: the cap is at or above all of it, and
    nothing is capped)."""
    return limit_bytes / total_bytes if limit_bytes < total_bytes else None


def memory_share(config: RunConfig) -> float | None:
    """The share of the smallest of the run's GPUs' memory that `--gpu-memory-gb` allows, read
    through NVML without a framework (None: no cap, no GPU seen, or a cap at or above it)."""
    limit = cap_bytes(config)
    if limit is None:
        return None
    nvml = nvml_or_none()
    if nvml is None:
        return None
    indices = [gpu.index for gpu in visible_gpus()[: config.devices]]
    totals = [nvml.nvmlDeviceGetMemoryInfo(handle).total for index, handle in nvml_devices(nvml) if index in indices]
    return share_of(limit, min(totals)) if totals else None
