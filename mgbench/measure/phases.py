"""Where a run's time went, phase by phase, on the clock its utilisation trace keeps.

A trace's `seconds` count from the launch, and so do a row's own clocks: `startup_seconds` ends
at the first training step, a compiled run's compile step follows, then its steps one after
another (`step_seconds`, warm-up first), then the profiled window and the evaluation. A run
trained in epochs validates after each epoch (`epoch_metrics`: each epoch's `elapsed_seconds`
from the first step, its `val_seconds`), and the wall time of an epoch's training that its steps
do not account for (its loader set up, the step clock started and read) opens the epoch: an
`epoch start`, never steady.

The phases are what the report shades on every run's utilisation (`reports.run_charts`) and what
a row's utilisation figures are taken over (`utilisation`: the steady phases only). A stall is
what the row counted as one (`timing`'s one rule, from the row's own warm-up: `row_window`): a
rare step after warm-up over twice the median, shaded as such and left out of the steady window,
so one loader restart or collection neither hides among the steady samples nor drags their
median, and the stall phases add up to the row's `stall_seconds`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mgbench.measure.timing import SteadyWindow, Warmup, window_after

STARTUP, COMPILE, EPOCH_START, WARMUP, STEADY, STALL, PROFILE, EVALUATION = (
    "start-up",
    "compile",
    "epoch start",
    "warm-up",
    "steady",
    "stall",
    "profile",
    "evaluation",
)
PHASES = (STARTUP, COMPILE, EPOCH_START, WARMUP, STEADY, STALL, PROFILE, EVALUATION)


@dataclass(frozen=True)
class Phase:
    """One stretch of a run: its name (`PHASES`) and its start and end, seconds since the launch."""

    name: str
    start: float
    end: float

    @property
    def seconds(self) -> float:
        return self.end - self.start


def _seconds(value: object) -> float:
    """A clock reading of a row (a results record or a frame row): 0 where it has none (null, NaN)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0:
        return float(value)
    return 0.0


class _Timeline:
    """Phases laid end to end from a start, a phase that continues the last one merged into it."""

    def __init__(self, start: float = 0.0):
        self.at = start
        self.phases: list[Phase] = []

    def add(self, name: str, seconds: float) -> None:
        if seconds <= 0:
            return
        last = self.phases[-1] if self.phases else None
        if last is not None and last.name == name and math.isclose(last.end, self.at):
            self.phases[-1] = Phase(name, last.start, self.at + seconds)
        else:
            self.phases.append(Phase(name, self.at, self.at + seconds))
        self.at += seconds

    def jump(self, to: float) -> None:
        self.at = max(self.at, to)


def row_window(row: Mapping[str, Any]) -> SteadyWindow:
    """The row's warm-up (its own `warmup_steps`) and the stalls it counted, found again in its
    step series by `timing`'s one rule (`timing.window_after`); none in a row that counted none,
    such as one written before stalls were counted (`stall_steps` null), whose figures took every
    step after warm-up."""
    steps = [float(s) for s in row.get("step_seconds") or []]
    warmup = Warmup(int(_seconds(row.get("warmup_steps"))), bool(row.get("warmup_detected")))
    return window_after(steps, warmup) if _seconds(row.get("stall_steps")) else SteadyWindow(warmup, ())


def _step_phases(timeline: _Timeline, steps: Sequence[float], first: int, window: SteadyWindow) -> None:
    """Steps `first`, `first + 1`, ... of the run: warm-up, then steady or stall each."""
    stalled = set(window.stalls)
    for index, seconds in enumerate(steps, start=first):
        name = WARMUP if index < window.warmup.steps else STALL if index in stalled else STEADY
        timeline.add(name, seconds)


def _epochs_phases(row: Mapping[str, Any], start: float, compile_seconds: float) -> list[Phase]:
    """Each epoch: its unclocked opening (`EPOCH_START`), the compile step in the first, its
    steps, then its validation."""
    epochs = list(row["epoch_metrics"])
    steps = [float(s) for s in row.get("step_seconds") or []]
    untimed = 1 if compile_seconds else 0  # the compile step: the first epoch's first, not in the series
    per_epoch, uneven = divmod(len(steps) + untimed, len(epochs))
    if uneven:  # epochs of unequal length: their steps cannot be told apart, only their spans
        per_epoch, steps = 0, []
    window = row_window(row)
    timeline = _Timeline(start)
    elapsed = 0.0
    for index, epoch in enumerate(epochs):
        opening = start + elapsed
        ends = start + _seconds(epoch.get("elapsed_seconds"))
        validation = _seconds(epoch.get("val_seconds"))
        first = max(0, index * per_epoch - untimed)
        own = steps[first : max(first, (index + 1) * per_epoch - untimed)]
        compiled = compile_seconds if index == 0 else 0.0
        gap = ends - validation - opening - sum(own) - compiled
        timeline.jump(opening)
        if per_epoch:  # else the whole of the epoch's training would read as its opening
            timeline.add(EPOCH_START, gap)
        timeline.add(COMPILE, compiled)
        _step_phases(timeline, own, first, window)
        timeline.jump(ends - validation)
        timeline.add(EVALUATION, validation)
        elapsed = _seconds(epoch.get("elapsed_seconds"))
    return timeline.phases


def run_phases(row: Mapping[str, Any]) -> list[Phase]:
    """The phases of an ok row, from its own clocks; none for a row that did not finish.

    A row without its step series (a folder written by an early version) is laid out from its
    warm-up and training seconds instead, with no stall told apart.
    """
    if row.get("status") != "ok" or not _seconds(row.get("startup_seconds")):
        return []
    startup, compiled = _seconds(row.get("startup_seconds")), _seconds(row.get("compile_seconds"))
    head = [Phase(STARTUP, 0.0, startup)]
    epochs = row.get("epoch_metrics")
    if isinstance(epochs, list) and epochs:
        return head + _epochs_phases(row, startup, compiled)
    timeline = _Timeline(startup)
    timeline.add(COMPILE, compiled)
    steps = [float(s) for s in row.get("step_seconds") or []]
    if steps:
        _step_phases(timeline, steps, 0, row_window(row))
    else:
        warm = _seconds(row.get("warmup_seconds"))
        timeline.add(WARMUP, warm)
        timeline.add(STEADY, _seconds(row.get("train_seconds")) - warm)
    timeline.add(PROFILE, _seconds(row.get("profile_seconds")))
    timeline.add(EVALUATION, _seconds(row.get("eval_seconds")))
    return head + timeline.phases


def steady_spans(phases: Sequence[Phase]) -> list[Phase]:
    """The steady phases: what a row's utilisation figures are taken over."""
    return [phase for phase in phases if phase.name == STEADY]
