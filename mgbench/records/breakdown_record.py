"""The breakdown files of a profiled run: every figure of a row's `breakdown` can be recomputed
from what they keep.

After its window each process writes `profiles/<run_id>/rank<R>-breakdown.json`:

    {"rank", "trace", "profiler", "clock" ("device" or "cpu"), "steps",
     "window_source" ("step marks", or "host clock" where the trace has none),
     "window_seconds", "window_step_seconds", "input_wait_seconds",
     "timed_step": {"seconds", "input_wait"} (or null), "step_spans": [[start, end], ...],
     "devices": {NAME: {"intervals": [[start, end, kind], ...], "seconds": {...},
                        "window_shares": {...}, "shares": {...}}}}

in seconds from the first step's start, intervals clipped to the steps; `seconds` and
`window_shares` are `breakdown.device_times` and `breakdown.step_shares` of those intervals
(the profiled steps as they ran), and `shares` are `breakdown.timed_step_shares`: the same
device work per step as shares of the timed step the row measured, whose length the profiler
did not stretch (`window_shares` where there is no timed step). When every process has ended,
the orchestrator merges the ranks into `profiles/<run_id>/breakdown.json`:

    {"clock", "aggregation", "breakdown", "bottleneck", "ranks": [file, ...],
     "devices": {"rank<R>/NAME": {"seconds", "shares"}}}

and copies `breakdown`, `bottleneck` and `clock` into the row (`breakdown_clock`), with the
bottleneck's note and the device-busy ceiling (`breakdown.device_ceiling`) beside them.

An ok row without a breakdown (not profiled, as by default on CPU devices and with `--epochs`, or
its profile failed) takes its `bottleneck` from its host timing (`breakdown.host_bottleneck` of
`host_breakdown`) with `breakdown_clock` `host` (`attach_host_bottleneck`), so every ok row names
what holds it back in `results.jsonl` itself. On a GPU the host's step call is launching the step
and, where the device's queue is full, waiting for room in it: its bottleneck says whether the host
waited for input or for the step, and a profile splits the step itself.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from mgbench.measure.breakdown import (
    Span,
    TimedStep,
    bottleneck,
    bottleneck_note,
    clip,
    device_ceiling,
    device_times,
    host_bottleneck,
    length,
    mean_shares,
    step_shares,
    timed_step_shares,
    union,
)
from mgbench.measure.timing import HOST_PHASES
from mgbench.measure.trace_events import TraceWindow
from mgbench.records.results import RunResult, write_json_atomically

RANK_BREAKDOWN_FILE = "rank{}-breakdown.json"
RUN_BREAKDOWN_FILE = "breakdown.json"
AGGREGATION = "mean over devices of each share"
HOST_CLOCK = "host"
"""`breakdown_clock` of a row whose bottleneck was read from its host timing, not a profile."""
READ_ERRORS = (OSError, ValueError, KeyError, TypeError)


def rank_breakdown_path(profile_dir: Path, rank: int) -> Path:
    return profile_dir / RANK_BREAKDOWN_FILE.format(rank)


def window_spans(window: TraceWindow, host_seconds: float) -> tuple[list[Span], str]:
    """The profiled steps on the trace's clock: the marked steps, or, where the adapter marked
    none, the host-clocked length of the window laid from the first event the devices ran."""
    if window.steps:
        return sorted(set(window.steps)), "step marks"
    starts = [start for intervals in window.devices.values() for start, _, _ in intervals]
    first = min(starts, default=0.0)
    return [(first, first + host_seconds)], "host clock"


def rank_breakdown(
    window: TraceWindow, host_seconds: float, input_wait_seconds: float, steps: int, timed: TimedStep | None = None
) -> dict[str, Any]:
    """This process's devices over the window: intervals, seconds and shares (module doc)."""
    spans, source = window_spans(window, host_seconds)
    origin = spans[0][0]
    shifted = [(start - origin, end - origin) for start, end in spans]
    window_seconds = length(union(shifted))
    devices = {}
    for name, intervals in sorted(window.devices.items()):
        inside = [(start - origin, end - origin, kind) for start, end, kind in clip(intervals, spans)]
        times = device_times(inside, shifted)
        window_shares = step_shares(times, input_wait_seconds)
        devices[name] = {
            "intervals": inside,
            "seconds": times.to_dict(),
            "window_shares": window_shares,
            "shares": window_shares if timed is None else timed_step_shares(times, steps, timed),
        }
    return {
        "clock": window.clock,
        "window_source": source,
        "window_seconds": window_seconds,
        "window_step_seconds": window_seconds / steps,
        "input_wait_seconds": input_wait_seconds,
        "timed_step": None if timed is None else asdict(timed),
        "step_spans": shifted,
        "devices": devices,
    }


def write_rank_breakdown(
    profile_dir: Path,
    rank: int,
    trace_path: Path,
    window: TraceWindow,
    profiler: str,
    steps: int,
    host_seconds: float,
    input_wait_seconds: float,
    timed: TimedStep | None = None,
) -> str | None:
    """Write this rank's breakdown file from its read trace; the reason when there is none."""
    record: dict[str, Any] = {"rank": rank, "trace": str(trace_path), "profiler": profiler, "steps": steps}
    try:
        record.update(rank_breakdown(window, host_seconds, input_wait_seconds, steps, timed))
    except ValueError as error:  # a window with no step time in it
        record["error"] = f"{type(error).__name__}: {error}"
    write_json_atomically(rank_breakdown_path(profile_dir, rank), json.dumps(record))
    return record.get("error")


def merge_breakdowns(profile_dir: Path) -> dict[str, Any] | None:
    """Every rank's devices in `breakdown.json` and the run's breakdown (None: no rank file)."""
    files = list(profile_dir.glob(RANK_BREAKDOWN_FILE.format("*")))
    if not files:
        return None
    try:
        records = sorted((json.loads(path.read_text()) for path in files), key=lambda record: record["rank"])
        errors = [f"rank {record['rank']}: {record['error']}" for record in records if "error" in record]
        if errors:
            raise ValueError("; ".join(errors))
        devices = {
            f"rank{record['rank']}/{name}": {"seconds": device["seconds"], "shares": device["shares"]}
            for record in records
            for name, device in record["devices"].items()
        }
        shares = mean_shares(device["shares"] for device in devices.values())
        merged: dict[str, Any] = {
            "clock": records[0]["clock"],
            "aggregation": AGGREGATION,
            "breakdown": shares,
            "bottleneck": bottleneck(shares),
            "ranks": [rank_breakdown_path(profile_dir, record["rank"]).name for record in records],
            "devices": devices,
        }
    except READ_ERRORS as error:
        merged = {"error": str(error)}
    write_json_atomically(profile_dir / RUN_BREAKDOWN_FILE, json.dumps(merged, indent=1))
    return merged


def attach_breakdown(result: RunResult, profile_dir: Path) -> None:
    """The merged breakdown into the row; why there is none into its `profile` instead."""
    merged = merge_breakdowns(profile_dir)
    if merged is None:
        return
    profiled, timing = result.profiled, result.timing
    if "error" in merged:
        profiled.profile = {**(profiled.profile or {}), "breakdown_error": merged["error"]}
        return
    profiled.breakdown = merged["breakdown"]
    profiled.bottleneck = merged["bottleneck"]
    profiled.bottleneck_note = bottleneck_note(merged["breakdown"])
    profiled.breakdown_clock = merged["clock"]
    if timing.median_step_seconds and timing.samples_per_sec:
        ceiling = device_ceiling(
            result.config.global_batch, timing.median_step_seconds, timing.samples_per_sec, merged["breakdown"]
        )
        if ceiling is not None:
            profiled.device_ceiling_samples_per_sec, profiled.ceiling_taken = ceiling.samples_per_sec, ceiling.taken


def attach_host_bottleneck(result: RunResult) -> None:
    """The bottleneck of an ok row without a breakdown, from its host timing (module doc); rows
    with a breakdown and rows whose host timing has a share without a value (written as null)
    stay as they are."""
    shares = result.host_breakdown
    if result.status != "ok" or result.profiled.breakdown is not None or shares is None:
        return
    if all(isinstance(shares.get(name), int | float) for name in HOST_PHASES):
        result.profiled.bottleneck, result.profiled.breakdown_clock = host_bottleneck(shares), HOST_CLOCK
