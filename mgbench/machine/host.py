"""The host environment a result was measured in (no framework imported).

Framework versions come from the adapter that ran; this module adds what the host says:
Python, CPU, GPU names and memory, driver and clocks, so a result copied to another machine
still tells where it came from.
"""

from __future__ import annotations

import os
import platform
import socket
from typing import Any

import psutil

import mgbench
from mgbench.machine.devices import nvml_devices, nvml_or_none


def gpu_environment(nvml: Any = None) -> list[dict[str, Any]]:
    """One entry per GPU NVML sees: name, memory, current and maximum SM and memory clocks, PCIe link.

    `nvml` is the initialised pynvml module (looked up when not given); PCIe links read
    `gen<G> x<W>` so that GPUs can be compared with one string.
    """
    nvml = nvml or nvml_or_none()
    if nvml is None:
        return []
    gpus = []
    for index, handle in nvml_devices(nvml):
        entry: dict[str, Any] = {
            "index": index,
            "name": str(nvml.nvmlDeviceGetName(handle)),
            "memory_total_mib": int(nvml.nvmlDeviceGetMemoryInfo(handle).total) // 2**20,
        }
        for label, clock in (("sm", nvml.NVML_CLOCK_SM), ("mem", nvml.NVML_CLOCK_MEM)):
            try:
                entry[f"{label}_clock_mhz"] = int(nvml.nvmlDeviceGetClockInfo(handle, clock))
                entry[f"{label}_clock_max_mhz"] = int(nvml.nvmlDeviceGetMaxClockInfo(handle, clock))
            except nvml.NVMLError:
                continue
        for key, generation, width in (
            ("pcie_link", nvml.nvmlDeviceGetCurrPcieLinkGeneration, nvml.nvmlDeviceGetCurrPcieLinkWidth),
            ("pcie_link_max", nvml.nvmlDeviceGetMaxPcieLinkGeneration, nvml.nvmlDeviceGetMaxPcieLinkWidth),
        ):
            try:
                entry[key] = f"gen{int(generation(handle))} x{int(width(handle))}"
            except nvml.NVMLError:
                continue
        gpus.append(entry)
    return gpus


def host_environment() -> dict[str, Any]:
    nvml = nvml_or_none()
    env: dict[str, Any] = {
        "mgbench": mgbench.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "hostname": socket.gethostname(),
        "cpu_count": os.cpu_count(),
        "memory_total_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "gpus": gpu_environment(),
    }
    if nvml is not None:
        env["driver"] = str(nvml.nvmlSystemGetDriverVersion())
        env["cuda_driver"] = nvml.nvmlSystemGetCudaDriverVersion_v2()
    return env
