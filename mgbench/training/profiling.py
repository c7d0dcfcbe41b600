"""`--profile STEPS`: a profiler trace of steady-state steps, its op summary in the result row,
and the step-time breakdown of every device.

The window is STEPS extra steps run after the timed ones (so profiler overhead never touches
the measured figures), when the job is past warm-up, clocked as the timed steps are. Each
process writes its trace to `profiles/<run_id>/rank<R>-trace.json` in the run folder and its
devices' breakdown beside it (`breakdown_record`); the primary's op summary goes into the
row's `profile` field:

    {"steps", "trace", "clock" ("device" or "cpu" self time), "total_self_seconds",
     "communication_seconds", "communication_share", "input_copy_seconds", "input_copy_share",
     "top_ops": [{"name", "self_seconds", "calls"}, ...], "kernels_per_step", "window_slowdown",
     "cost_seconds"}

`kernels_per_step` is what each device ran per profiled step: kernels, copies and memsets on a
GPU (XLA's ops there), operators on a CPU; a step of thousands of small kernels, each launched
from Python, is one the host sets the pace of. `window_slowdown` is the profiled steps' mean length over the timed steps' median: how much the
profiler itself lengthened the step (the breakdown's shares are of the timed step, see
`breakdown.timed_step_shares`). `cost_seconds` says where the window's wall time went: `steps`
(the profiled steps), `profiler` (starting and stopping it, writing the trace), `read`
(loading and reading the trace), `analysis` (the op summary and the breakdown file). A trace
that could not be split into a breakdown adds `breakdown_error`; only `steps` and `error` (and
`trace`) where there is no window (no profiler here, the profiler failed, or its trace could
not be read).

An adapter supports profiling with a method `profile(run_steps, trace_path)`: run the callable
under its framework's profiler, handing it the profiler's span marker where the trace should
mark the steps (see `Adapter.profile`), and write the trace. The trace is then read once, by its profiler's reader
(`trace_events.TRACE_READERS`), into the window that gives both the op summary and the
breakdown: the exported Chrome trace is the profilers' public format, where their in-memory
event objects change between versions. Classifying op names is framework-neutral, so every
adapter on one profiler counts its time the same way. A profiler that fails leaves the run's
measured steps intact: the row keeps them and its `profile` says why there is no window.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, Protocol

from mgbench.core.safe_files import clear_name
from mgbench.measure.breakdown import TimedStep
from mgbench.measure.trace_events import TRACE_READERS, OpSpan, is_communication
from mgbench.records.breakdown_record import READ_ERRORS, write_rank_breakdown
from mgbench.training.protocol import Adapter, OpTime

TOP_OPS = 10
INPUT_COPY_MARKERS = ("memcpy", "aten::copy_", "aten::to", "aten::_to_copy", "pin_memory", "htod", "dtoh")


def is_input_copy(name: str) -> bool:
    lowered = name.lower()
    return not is_communication(name) and any(marker in lowered for marker in INPUT_COPY_MARKERS)


def self_time_ops(spans: Iterable[OpSpan]) -> list[OpTime]:
    """Self time and calls per op name from timed spans `(line, start, end, name)`.

    Spans on one line (a host thread) nest: an op's self time is its length less the parts of
    it its nested ops cover, so an operator that calls others is not counted twice. Device
    kernels, which do not nest, come out as their own lengths when each stream is its line.
    """
    seconds: dict[str, float] = defaultdict(float)
    calls: dict[str, int] = defaultdict(int)
    by_line: dict[Hashable, list[tuple[float, float, str]]] = defaultdict(list)
    for line, start, end, name in spans:
        by_line[line].append((start, end, name))
    for line_spans in by_line.values():
        open_spans: list[tuple[float, str]] = []
        for start, end, name in sorted(line_spans, key=lambda span: (span[0], -span[1])):
            while open_spans and open_spans[-1][0] <= start:
                open_spans.pop()
            if open_spans:
                parent_end, parent = open_spans[-1]
                seconds[parent] -= min(end, parent_end) - start
            seconds[name] += end - start
            calls[name] += 1
            open_spans.append((end, name))
    return [OpTime(name, seconds[name], calls[name]) for name in seconds]


def summarise_ops(ops: list[OpTime], steps: int, trace: Path, clock: str) -> dict[str, Any]:
    """Top ops by self time and the time in communication and in input/data copies."""
    total = sum(op.self_seconds for op in ops)
    communication = sum(op.self_seconds for op in ops if is_communication(op.name))
    copies = sum(op.self_seconds for op in ops if is_input_copy(op.name))
    top = sorted(ops, key=lambda op: op.self_seconds, reverse=True)[:TOP_OPS]
    return {
        "steps": steps,
        "trace": str(trace),
        "clock": clock,
        "total_self_seconds": total,
        "communication_seconds": communication,
        "communication_share": communication / total if total else 0.0,
        "input_copy_seconds": copies,
        "input_copy_share": copies / total if total else 0.0,
        "top_ops": [{"name": op.name, "self_seconds": op.self_seconds, "calls": op.calls} for op in top],
    }


def trace_path(profile_dir: Path, rank: int) -> Path:
    return profile_dir / f"rank{rank}-trace.json"


class ClockedSteps(Protocol):
    """The driver's step clock (`driver.StepClock`): steps taken as the timed ones are, each
    synchronised, with each step's seconds (once `finish` has read them) and input wait kept."""

    step_seconds: list[float]
    waits: list[float]

    def step(self, batches: Iterator[Any]) -> None: ...

    def finish(self) -> None: ...


def profile_window(
    adapter: Adapter,
    clock: ClockedSteps,
    batches: Iterator[Any],
    steps: int,
    profile_dir: Path,
    rank: int,
    profiler: str | None,
    timed: TimedStep | None = None,
) -> dict[str, Any]:
    """Run `steps` more clocked steps under the adapter's profiler (`profiler`, from the
    registry's capabilities), each inside the step mark where the adapter uses one; write this
    rank's trace and breakdown file (its shares of the `timed` step, where given:
    `breakdown_record`). Returns the op summary with the window's cost per phase, or why there
    is none."""
    if profiler is None:
        return {"steps": 0, "error": f"{adapter.config.framework} has no profiler here"}
    read_trace = TRACE_READERS.get(profiler)
    if read_trace is None:
        return {"steps": 0, "error": f"no trace reader for {profiler}"}
    stepping: list[float] = []

    def run_steps(mark: Callable[[], AbstractContextManager] = nullcontext) -> None:
        started = time.perf_counter()
        for _ in range(steps):
            with mark():
                clock.step(batches)
        clock.finish()
        stepping.append(time.perf_counter() - started)

    profile_dir.mkdir(parents=True, exist_ok=True)
    # The profiler opens the path itself: a link or a hard link a folder from elsewhere left there goes first.
    path = clear_name(profile_dir, trace_path(profile_dir, rank).name)
    started = time.perf_counter()
    try:
        adapter.profile(run_steps, path)
    except Exception as error:  # the window runs after the measured steps: a broken profiler must not cost them
        return {"steps": steps, "error": f"profiler failed: {type(error).__name__}: {error}"}
    profiled = time.perf_counter()
    try:
        window = read_trace(json.loads(path.read_text()))
    except READ_ERRORS as error:  # a missing, truncated or foreign trace
        return {"steps": steps, "trace": str(path), "error": f"trace unreadable: {type(error).__name__}: {error}"}
    read = time.perf_counter()
    summary = summarise_ops(self_time_ops(window.ops), steps, path, window.clock)
    summary["kernels_per_step"] = len(window.ops) / steps / max(len(window.devices), 1)
    breakdown_error = write_rank_breakdown(
        profile_dir, rank, path, window, profiler, steps, sum(clock.step_seconds), sum(clock.waits), timed
    )
    if breakdown_error:
        summary["breakdown_error"] = breakdown_error
    if timed is not None:
        summary["window_slowdown"] = sum(clock.step_seconds) / len(clock.step_seconds) / timed.seconds
    summary["cost_seconds"] = {
        "steps": sum(stepping),
        "profiler": profiled - started - sum(stepping),
        "read": read - profiled,
        "analysis": time.perf_counter() - read,
    }
    return summary
