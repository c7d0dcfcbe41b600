"""A row's utilisation figures, from its trace over its steady window.

The monitor samples every device of a run about ten times a second into `traces/<run>.csv`
(`runner.monitor`): GPU utilisation and memory through NVML, or where CPU devices stand in, the
host's CPU and memory through psutil, which count every process on the host, not the run's alone.
A row keeps, over its steady phases (`phases.steady_spans`: warm-up, compile, stalls, evaluation
left out), the median and p10-p90 of each device's samples and of all its devices' samples
pooled, and the most memory a device held there; where its steady window holds no sample (a run
shorter than the sampling interval), it keeps none.

A reading tells of the time before it: NVML's utilisation is the share of its sample period
(1/6 s to 1 s, by product) in which a kernel ran, psutil's the CPU time since the monitor's last
reading. So a reading counts toward a steady span only when the whole period it tells of lies
inside the span: its first second is left out on GPUs. Without that, a short window's figure is
mostly the idle warm-up before it (benchmarks/RUNS.md, 2026-11-28, 2x H200, run b).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mgbench.core.safe_files import read_regular
from mgbench.measure.phases import Phase, run_phases, steady_spans
from mgbench.records.figures import UtilisationFigures
from mgbench.records.results import RunResult
from mgbench.records.runfolder import TRACE_COLUMNS

TRACE_TEXT_COLUMNS = ("kind", "device")
"""The columns of a trace that name things (`cpu`/`gpu`, the device); the others are samples."""
SOURCES = {"gpu": "GPU (NVML)", "cpu": "host CPU (psutil, every process on the host)"}
"""What a trace's `kind` measured, as rows and reports name it."""
SAMPLE_INTERVAL_SECONDS = 0.1
"""How often the monitor reads every device (`runner.monitor`)."""
READING_SECONDS = {"gpu": 1.0, "cpu": SAMPLE_INTERVAL_SECONDS}
"""How far back a reading of each `kind` tells: NVML's longest sample period, psutil's interval."""


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


def told_of(spans: list[Phase], period: float) -> list[Phase]:
    """Where a reading that tells of the `period` before it must be taken to tell of `spans` alone."""
    return [Phase(span.name, span.start + period, span.end) for span in spans if span.seconds > period]


def _spread(values: pd.Series) -> dict[str, float]:
    p10, median, p90 = np.percentile(values.to_numpy(dtype=float), [10, 50, 90])
    return {"utilisation_pct": float(median), "utilisation_p10_pct": float(p10), "utilisation_p90_pct": float(p90)}


def utilisation_figures(trace: pd.DataFrame, phases: list[Phase]) -> dict[str, Any]:
    """The row's figures over the steady phases of `phases` (`RunResult`'s utilisation fields);
    empty where no sample lies there."""
    spans = steady_spans(phases)
    samples = pd.concat(
        [within(own, told_of(spans, READING_SECONDS[str(kind)])) for kind, own in trace.groupby("kind")]
        or [trace.iloc[:0]]
    ).dropna(subset=["utilization_pct"])
    if samples.empty:
        return {}
    devices: list[dict[str, Any]] = []
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
    if figures := utilisation_figures(trace, run_phases(result.to_record())):
        result.utilisation = UtilisationFigures(**figures)
