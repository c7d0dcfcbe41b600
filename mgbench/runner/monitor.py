"""Background utilisation sampler: per GPU through NVML, or the CPU through psutil.

The orchestrator samples while a run's subprocess works, at about 10 Hz, into one CSV per run
(`traces/<run_id>.csv`). Sampling from the parent keeps adapters free of monitoring code and
sees the devices whatever framework drives them. On a machine without an NVIDIA GPU the trace
holds the CPU (device `cpu`) and says so in its `kind` column.
"""

from __future__ import annotations

import csv
import threading
import time
from pathlib import Path
from types import TracebackType

import psutil

from mgbench.core.safe_files import fresh_stream
from mgbench.machine.devices import nvml_or_none
from mgbench.records.runfolder import TRACE_COLUMNS
from mgbench.records.utilisation import SAMPLE_INTERVAL_SECONDS


class DeviceMonitor:
    """Context manager: samples until exit, then the CSV at `path` holds the trace, a file made
    anew (`safe_files.fresh_stream`: a link or a hard link left at the name is not written
    through). A trace it could not write (disk full) is raised at exit, from the thread that
    runs the monitor."""

    def __init__(self, path: Path, gpu_indices: list[int], interval: float = SAMPLE_INTERVAL_SECONDS):
        self.path = path
        self.interval = interval
        self.nvml = nvml_or_none() if gpu_indices else None
        self.handles = (
            [(i, self.nvml.nvmlDeviceGetHandleByIndex(i)) for i in gpu_indices] if self.nvml is not None else []
        )
        self._stop = threading.Event()
        self._error: OSError | None = None
        self._thread = threading.Thread(target=self._sample_loop, name="mgbench-monitor", daemon=True)

    @property
    def kind(self) -> str:
        return "gpu" if self.handles else "cpu"

    def __enter__(self) -> DeviceMonitor:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join()
        if self._error is not None and exc is None:
            raise self._error

    def _gpu_rows(self, elapsed: float) -> list[list[object]]:
        nvml = self.nvml
        if nvml is None:
            return []
        rows = []
        for index, handle in self.handles:
            util = nvml.nvmlDeviceGetUtilizationRates(handle)
            memory = nvml.nvmlDeviceGetMemoryInfo(handle)
            rows.append(
                [
                    round(elapsed, 3),
                    "gpu",
                    index,
                    util.gpu,
                    memory.used // 2**20,
                    memory.total // 2**20,
                    nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM),
                    nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_MEM),
                ]
            )
        return rows

    def _cpu_rows(self, elapsed: float) -> list[list[object]]:
        memory = psutil.virtual_memory()
        return [
            [
                round(elapsed, 3),
                "cpu",
                "cpu",
                psutil.cpu_percent(interval=None),
                (memory.total - memory.available) // 2**20,
                memory.total // 2**20,
                "",
                "",
            ]
        ]

    def _sample_loop(self) -> None:
        try:
            self._write_samples()
        except OSError as error:
            self._error = error

    def _write_samples(self) -> None:
        start = time.perf_counter()
        psutil.cpu_percent(interval=None)
        with fresh_stream(self.path.parent, self.path.name, newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(TRACE_COLUMNS)
            while not self._stop.wait(self.interval):
                elapsed = time.perf_counter() - start
                writer.writerows(self._gpu_rows(elapsed) if self.handles else self._cpu_rows(elapsed))
                handle.flush()
