"""Which devices exist, seen from the orchestrating process without importing a framework.

GPUs are counted through NVML (nvidia-ml-py), honouring CUDA_VISIBLE_DEVICES, because the
orchestrator must validate `--gpus N` and sample utilisation before any framework starts.
Where there is no NVIDIA GPU, CPU devices stand in: N processes or logical devices.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from mgbench.core.errors import UsageError
from mgbench.core.kinds import DeviceKind

AUTO = "auto"
"""`--device auto`: GPUs when visible, else CPU devices (`resolve_device_kind`)."""
DEVICE_REQUESTS: tuple[str, ...] = (AUTO, *DeviceKind)


@dataclass(frozen=True)
class GpuInfo:
    index: int
    """NVML index (physical), which is what the monitor samples."""
    name: str
    uuid: str


def nvml_or_none():
    """The initialised pynvml module, or None where there is no NVIDIA driver."""
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml
    except Exception:
        return None


def nvml_devices(nvml: Any) -> Iterator[tuple[int, Any]]:
    """Every GPU the initialised pynvml module `nvml` sees: its index (physical) and its handle."""
    for index in range(nvml.nvmlDeviceGetCount()):
        yield index, nvml.nvmlDeviceGetHandleByIndex(index)


def _visible(gpus: list[GpuInfo]) -> list[GpuInfo]:
    mask = os.environ.get("CUDA_VISIBLE_DEVICES")
    if mask is None:
        return gpus
    chosen = []
    for token in filter(None, (t.strip() for t in mask.split(","))):
        match = [g for g in gpus if token == str(g.index) or g.uuid.startswith(token)]
        if not match:
            break
        chosen.append(match[0])
    return chosen


def visible_gpus() -> list[GpuInfo]:
    """NVIDIA GPUs this process may use, in CUDA order."""
    nvml = nvml_or_none()
    if nvml is None:
        return []
    gpus = [
        GpuInfo(index, str(nvml.nvmlDeviceGetName(handle)), str(nvml.nvmlDeviceGetUUID(handle)))
        for index, handle in nvml_devices(nvml)
    ]
    return _visible(gpus)


def resolve_device_kind(request: str) -> DeviceKind:
    """`auto` means CUDA when a GPU is visible, else CPU devices standing in for GPUs."""
    if request == AUTO:
        return DeviceKind.CUDA if visible_gpus() else DeviceKind.CPU
    kind = DeviceKind(request)
    if kind.on_gpu and not visible_gpus():
        raise UsageError(f"--device {kind} was asked for but no NVIDIA GPU is visible")
    return kind


def device_capacity(kind: DeviceKind) -> int:
    """How many devices a run may ask for: visible GPUs, or CPU cores standing in for them."""
    return len(visible_gpus()) if kind.on_gpu else (os.cpu_count() or 1)


def check_device_counts(counts: list[int], kind: DeviceKind) -> None:
    capacity = device_capacity(kind)
    for count in counts:
        if count < 1:
            raise UsageError(f"--gpus must be at least 1, got {count}")
        if count > capacity:
            what = "GPUs are visible" if kind.on_gpu else "CPU cores can stand in for GPUs"
            raise UsageError(f"--gpus {count} asked for, but only {capacity} {what}")
