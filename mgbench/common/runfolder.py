"""The run folder's layout and file names, in one place: the runner writes it, reports read it.

A compare's folder holds `results.jsonl` (one row per run, `mgbench.common.results`),
`compare.json` (the command, options and every planned config), `configs/`, `raw/`, `logs/`,
`traces/` (utilisation samples, columns `TRACE_COLUMNS`), `profiles/` and `bandwidth.json`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mgbench.common.results import RESULTS_FILE

COMPARE_FILE = "compare.json"
TRACE_COLUMNS = (
    "seconds",
    "kind",
    "device",
    "utilization_pct",
    "memory_used_mib",
    "memory_total_mib",
    "sm_clock_mhz",
    "mem_clock_mhz",
)
"""Columns of `traces/<run_id>.csv`: one utilisation sample of one device per line."""


@dataclass(frozen=True)
class RunFolder:
    """Where a compare writes: results, per-run configs, logs and utilisation traces."""

    root: Path

    @property
    def results(self) -> Path:
        return self.root / RESULTS_FILE

    def config_file(self, run_id: str) -> Path:
        return self.root / "configs" / f"{run_id}.json"

    def raw_result(self, run_id: str) -> Path:
        return self.root / "raw" / f"{run_id}.json"

    def log(self, run_id: str) -> Path:
        return self.root / "logs" / f"{run_id}.log"

    def trace(self, run_id: str) -> Path:
        return self.root / "traces" / f"{run_id}.csv"

    def profile_dir(self, run_id: str) -> Path:
        return self.root / "profiles" / run_id

    @property
    def bandwidth(self) -> Path:
        return self.root / "bandwidth.json"

    @property
    def compare_file(self) -> Path:
        return self.root / COMPARE_FILE
