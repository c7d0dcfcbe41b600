"""A row's utilisation figures, from its trace over its steady window.

The monitor samples every device of a run about ten times a second into `traces/<run>.csv`
(`runner.monitor`): GPU utilisation and memory through NVML, or where CPU devices stand in, the
host's CPU and memory through psutil, which count every process on the host, not the run's alone.
A row keeps, over its steady phases (`phases.steady_spans`: warm-up, compile, stalls, evaluation
left out), the median and p10-p90 of each device's samples and of all its devices' samples
pooled, and the most memory a device held there; where its steady window holds no sample (a run
shorter than the sampling interval), it keeps none.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mgbench.common.phases import Phase, run_phases, steady_spans
from mgbench.common.results import RunResult
from mgbench.common.runfolder import TRACE_COLUMNS
from mgbench.common.safe_files import read_regular

TRACE_TEXT_COLUMNS = ("kind", "device")
"""The columns of a trace that name things (`cpu`/`gpu`, the device); the others are samples."""
SOURCES = {"gpu": "GPU (NVML)", "cpu": "host CPU (psutil, every process on the host)"}
"""What a trace's `kind` measured, as rows and reports name it."""


def read_trace(path: Path) -> pd.DataFrame | None:
    """A run's utilisation samples, or None when the file is missing, no regular file (a FIFO is
    never waited on), empty or malformed: not UTF-8, short of a column, or text where a number
    belongs (`TRACE_TEXT_COLUMNS` aside, every column holds numbers, empty where a device does
    not report one), which every figure and chart of it would trip over."""
    try:
        trace = pd.read_csv(io.BytesIO(read_regular(path)))
    except (OSError, pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError):
        return None
    if trace.empty or not set(TRACE_COLUMNS) <= set(trace.columns):
        return None
    numbers = [column for column in TRACE_COLUMNS if column not in TRACE_TEXT_COLUMNS]
    if not all(pd.api.types.is_numeric_dtype(trace[column]) for column in numbers):
        return None
    return trace


def within(trace: pd.DataFrame, spans: list[Phase]) -> pd.DataFrame:
    """The samples taken inside any of `spans`."""
    seconds = trace["seconds"].to_numpy(dtype=float)
    inside = np.zeros(len(trace), dtype=bool)
    for span in spans:
        inside |= (seconds >= span.start) & (seconds <= span.end)
    return trace[inside]


def _spread(values: pd.Series) -> dict[str, float]:
    p10, median, p90 = np.percentile(values.to_numpy(dtype=float), [10, 50, 90])
    return {"utilisation_pct": float(median), "utilisation_p10_pct": float(p10), "utilisation_p90_pct": float(p90)}


def utilisation_figures(trace: pd.DataFrame, phases: list[Phase]) -> dict[str, Any]:
    """The row's figures over the steady phases of `phases` (`RunResult`'s utilisation fields);
    empty where no sample lies there."""
    samples = within(trace, steady_spans(phases)).dropna(subset=["utilization_pct"])
    if samples.empty:
        return {}
    devices = []
    for (kind, device), own in samples.groupby(["kind", "device"], sort=True):
        figures = _spread(own["utilization_pct"])
        devices.append(
            {
                "device": f"GPU {device}" if kind == "gpu" else "host CPU",
                **figures,
                "memory_used_mib": float(own["memory_used_mib"].max()),
            }
        )
    kinds = set(samples["kind"])
    return {
        **_spread(samples["utilization_pct"]),
        "utilisation_source": SOURCES.get(kinds.pop(), None) if len(kinds) == 1 else None,
        "memory_used_mib": max(device["memory_used_mib"] for device in devices),
        "device_utilisation": devices,
    }


def attach_utilisation(result: RunResult, trace_path: Path) -> None:
    """Give an ok row its utilisation figures from its trace (nothing where it has none)."""
    if result.status != "ok":
        return
    trace = read_trace(trace_path)
    if trace is None:
        return
    for name, value in utilisation_figures(trace, run_phases(result.to_record())).items():
        setattr(result, name, value)
