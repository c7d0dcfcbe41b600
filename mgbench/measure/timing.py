"""Step-time statistics: one rule for warm-up, stalls and the steady window, whatever the framework.

Every framework's steps go through the shared driver, which hands this module one time per step;
so warm-up, stalls and the steady rate are decided here, once, alike for all of them.

- **Warm-up** (graph compilation, cuDNN autotuning, allocator growth, caches) differs by framework
  and model, so a fixed "skip the first 10 steps" either keeps slow steps or throws good ones
  away. Instead the warm-up ends where a rolling median of step times first enters the
  steady-state band and stays in it for a whole window: the band is the median of the second
  half of the run plus or minus a tolerance, widened to the range the rolling median itself spans
  over that second half, so a series with periodic bursts of slower steps (DenseNet-121 on 4 GPUs,
  a few slower steps in every dozen) is not read as endless warm-up. The tolerance widens to
  twice the steady state's step-to-step noise (median absolute difference of successive steps,
  which a slow drift does not inflate) where that is larger, so noisy CPU series are steady too,
  while a quiet GPU series keeps the tight default. A series whose last quarter's median differs
  from its third quarter's by more than that tolerance is drifting, and is reported as never
  settling. Warm-up is only ever the run's first steps: a slow stretch later in the run (an epoch
  boundary, a loader restart) never makes the steps before it warm-up.
- **Stalls**: a step after warm-up that takes more than `STALL_FACTOR` times the median step is a
  stall (an epoch boundary, a loader restart, a garbage collection), as long as such steps are
  rare: at most one step in `1 / STALL_SHARE` (or one step in a shorter run). Slow steps that
  recur more often than that are how the job runs, and stay in the window. Stalls are counted and
  timed (`stall_steps`, `stall_seconds`) and kept out of the steady window.
- **The steady rate** (`samples_per_sec`): the samples of the steady steps (after warm-up, stalls
  left out) over their seconds end to end, what a training loop that never stalls gets. Its
  interval (`samples_per_sec_low`, `samples_per_sec_high`) is the slowest and fastest of the rates
  of the window's consecutive thirds: the same rate measured three times over, so a slow drift or
  a noisy stretch widens it.

So `warmup_seconds + stall_seconds + window_seconds = train_seconds` in every row.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

DEFAULT_WINDOW = 5
DEFAULT_TOLERANCE = 0.05
STALL_FACTOR = 2.0
"""A step after warm-up longer than this many median steps is a stall (where such steps are rare)."""
STALL_SHARE = 0.1
"""Slow steps are stalls only while they are at most this share of the steps after warm-up (or
one step): slow steps that recur more often are the job's steady state."""
SPREAD_PARTS = 3
"""The steady window is timed in this many consecutive parts for its interval."""

Item = TypeVar("Item")
PerStep = Sequence[float] | np.ndarray
"""A per-step series of seconds: as a row holds it, or as an array read from one."""

FIRST_STEP_KEPT = (
    "one timed step: the first, which cannot be told from warm-up, so its throughput is not a "
    "steady-state figure (--steps 2 or more leaves the first step out, 10 or more detect warm-up)"
)
"""Why a row of one timed step is not to be trusted as a throughput."""


@dataclass(frozen=True)
class Warmup:
    steps: int
    detected: bool


def first_step_kept(warmup_steps: int, warmup_detected: bool) -> bool:
    """Whether the steady figures include the first step although no steady state was seen: a
    run of one step, which `detect_warmup` cannot leave out without leaving nothing. Its figure
    holds whatever the first step did besides training (allocation, autotuning, caches)."""
    return warmup_steps == 0 and not warmup_detected


def detect_warmup(step_seconds: PerStep, window: int = DEFAULT_WINDOW, tolerance: float = DEFAULT_TOLERANCE) -> Warmup:
    """Number of leading steps to exclude, and whether a steady state was actually found.

    With too few steps to see a steady state, or none found, only the first step (which always
    carries start-up work) is excluded and `detected` is False, so reports can say so: the
    median over the whole run describes a wandering series better than its last few steps
    (DenseNet-121's step times wander over minutes on GPUs).
    """
    times = np.asarray(step_seconds, dtype=float)
    n = len(times)
    if n < 2 * window:
        return Warmup(steps=min(1, max(n - 1, 0)), detected=False)
    second_half = times[n // 2 :]
    reference = float(np.median(second_half))
    noise = float(np.median(np.abs(np.diff(second_half)))) / reference
    tolerance = max(tolerance, 2 * noise)
    third_quarter, last_quarter = np.median(times[n // 2 : 3 * n // 4]), np.median(times[3 * n // 4 :])
    if abs(last_quarter - third_quarter) > tolerance * reference:
        return Warmup(steps=1, detected=False)
    rolling = np.array([np.median(times[j : j + window]) for j in range(n - window + 1)])
    steady_rolling = rolling[n // 2 :]
    low = min(float(steady_rolling.min()), reference * (1 - tolerance))
    high = max(float(steady_rolling.max()), reference * (1 + tolerance))
    inside = (rolling >= low) & (rolling <= high)
    entries = [j for j in range(len(rolling) - window + 1) if inside[j : j + window].all()]
    if not entries:
        return Warmup(steps=1, detected=False)
    first_steady = entries[0]
    # A window's median hides up to half a window of slow steps at its start: walk past them.
    while not low <= times[first_steady] <= high:
        first_steady += 1
    return Warmup(steps=first_steady, detected=True)


def find_stalls(steady_seconds: PerStep) -> np.ndarray:
    """Which of the steps after warm-up are stalls (module doc): a boolean per step."""
    times = np.asarray(steady_seconds, dtype=float)
    slow = times > STALL_FACTOR * float(np.median(times)) if len(times) else np.zeros(0, dtype=bool)
    return slow if int(slow.sum()) <= max(1, int(STALL_SHARE * len(times))) else np.zeros_like(slow)


@dataclass(frozen=True)
class SteadyWindow:
    """Which steps of a run are warm-up, which are stalls, and so which are its steady window."""

    warmup: Warmup
    stalls: tuple[int, ...]
    """Indices (in the whole series) of the steps after warm-up that stalled."""

    def steady(self, series: Iterable[Item]) -> list[Item]:
        """The items of a per-step series (times, waits, host phases) of the steady steps."""
        stalled = set(self.stalls)
        return [item for index, item in enumerate(series) if index >= self.warmup.steps and index not in stalled]


def window_after(step_seconds: PerStep, warmup: Warmup) -> SteadyWindow:
    """The steady window of steps whose warm-up is known (a row's own `warmup_steps`): its stalls
    by the module's one rule, so a report that lays out a row's steps finds the stalls it counted."""
    stalled = np.nonzero(find_stalls(step_seconds[warmup.steps :]))[0] + warmup.steps
    return SteadyWindow(warmup, tuple(int(index) for index in stalled))


def steady_window(
    step_seconds: PerStep, window: int = DEFAULT_WINDOW, tolerance: float = DEFAULT_TOLERANCE
) -> SteadyWindow:
    """The run's warm-up and stalls, by the module's one rule."""
    return window_after(step_seconds, detect_warmup(step_seconds, window, tolerance))


@dataclass(frozen=True)
class StepStats:
    """Steady-state figures derived from per-step times (warm-up and stalls excluded)."""

    warmup_steps: int
    warmup_detected: bool
    warmup_seconds: float
    stall_steps: int
    stall_seconds: float
    steady_steps: int
    median_step_seconds: float
    window_seconds: float
    samples_per_sec: float
    samples_per_sec_low: float
    samples_per_sec_high: float
    samples_per_sec_p10: float
    samples_per_sec_p90: float
    input_wait_fraction: float
    train_seconds: float


def part_rates(steady_seconds: PerStep, global_batch: int) -> list[float]:
    """The rates of the steady window's consecutive parts (`SPREAD_PARTS`, fewer in a shorter window)."""
    times = np.asarray(steady_seconds, dtype=float)
    parts = np.array_split(times, min(SPREAD_PARTS, len(times)))
    return [global_batch * len(part) / float(part.sum()) for part in parts]


def summarise_steps(
    step_seconds: Sequence[float],
    input_wait_seconds: Sequence[float],
    global_batch: int,
    window: int = DEFAULT_WINDOW,
    tolerance: float = DEFAULT_TOLERANCE,
) -> StepStats:
    """Throughput over the steady window with its interval and the p10/p90 spread of its steps,
    and the share of the window spent waiting for input.

    The steady window is the steps after warm-up, stalls left out, end to end: `samples_per_sec`
    is its samples over its length (`window_seconds`, the sum of its steps), what a training loop
    that never waits for a step gets; the spread is of single steps (`global_batch` over a step's
    time). `step_seconds[i]` must include `input_wait_seconds[i]` (the driver times both from the
    same start), so the wait fraction is a share of the whole step.
    """
    times = np.asarray(step_seconds, dtype=float)
    waits = np.asarray(input_wait_seconds, dtype=float)
    if len(times) == 0:
        raise ValueError("no steps were timed")
    if len(waits) != len(times):
        raise ValueError("step and input-wait series differ in length")
    split = steady_window(times, window, tolerance)
    steady = np.asarray(split.steady(times))
    stalled = times[list(split.stalls)]
    median_step = float(np.median(steady))
    p10_step, p90_step = (float(v) for v in np.percentile(steady, [10, 90]))
    parts = part_rates(steady, global_batch)
    return StepStats(
        warmup_steps=split.warmup.steps,
        warmup_detected=split.warmup.detected,
        warmup_seconds=float(times[: split.warmup.steps].sum()),
        stall_steps=len(stalled),
        stall_seconds=float(stalled.sum()),
        steady_steps=len(steady),
        median_step_seconds=median_step,
        window_seconds=float(steady.sum()),
        samples_per_sec=global_batch * len(steady) / float(steady.sum()),
        samples_per_sec_low=min(parts),
        samples_per_sec_high=max(parts),
        samples_per_sec_p10=global_batch / p90_step,
        samples_per_sec_p90=global_batch / p10_step,
        input_wait_fraction=float(np.sum(split.steady(waits)) / steady.sum()),
        train_seconds=float(times.sum()),
    )


HOST_PHASES = ("input_wait", "step", "synchronize", "loss_read")
"""Where the host's time goes per step: waiting for the batch, the adapter's step call (the
whole step where the framework runs synchronously, as on CPU; launching it on a GPU), waiting
for the devices (per-step sync only), reading the loss (its collective where the strategy
all-reduces it, unless read after the window). Gradient collectives run inside the step."""


def host_phase_shares(phases: Sequence[Sequence[float]]) -> dict[str, float] | None:
    """Each of HOST_PHASES' share of the host's time over `phases` (one tuple of seconds per
    step, in HOST_PHASES' order); None without steps."""
    totals = np.asarray(phases, dtype=float).reshape(-1, len(HOST_PHASES)).sum(axis=0)
    whole = float(totals.sum())
    if whole <= 0:
        return None
    return {name: float(total) / whole for name, total in zip(HOST_PHASES, totals)}
