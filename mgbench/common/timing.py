"""Step-time statistics: warm-up detection and steady-state throughput.

Warm-up (graph compilation, cuDNN autotuning, allocator growth, caches) differs by framework
and model, so a fixed "skip the first 10 steps" either keeps slow steps or throws good ones
away. Instead the warm-up ends at the first step after which a rolling median of step times
stays inside the steady-state band: the median of the second half of the run plus or minus a
tolerance, widened to the range the rolling median itself spans over that second half. So a
leading stretch counts as warm-up only where it is slower (or faster) than anything the steady
half shows; a series with periodic bursts of slower steps (DenseNet-121 on 4 GPUs, a few
slower steps in every dozen) is not read as endless warm-up. The tolerance widens to
twice the steady state's step-to-step noise (median absolute difference of successive steps,
which a slow drift does not inflate) where that is larger, so noisy CPU series are steady too,
while a quiet GPU series keeps the tight default. A series whose last quarter's median differs
from its third quarter's by more than that tolerance is drifting, and is reported as never
settling.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

DEFAULT_WINDOW = 5
DEFAULT_TOLERANCE = 0.05


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


def detect_warmup(
    step_seconds: Sequence[float], window: int = DEFAULT_WINDOW, tolerance: float = DEFAULT_TOLERANCE
) -> Warmup:
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
    outside = np.nonzero((rolling < low) | (rolling > high))[0]
    first_steady = int(outside[-1]) + 1 if len(outside) else 0
    if first_steady > n - window:
        return Warmup(steps=1, detected=False)
    # A window's median hides up to half a window of slow steps at its start: walk past them.
    while not low <= times[first_steady] <= high:
        first_steady += 1
    return Warmup(steps=first_steady, detected=True)


@dataclass(frozen=True)
class StepStats:
    """Steady-state figures derived from per-step times (warm-up excluded)."""

    warmup_steps: int
    warmup_detected: bool
    warmup_seconds: float
    steady_steps: int
    median_step_seconds: float
    window_seconds: float
    images_per_sec: float
    images_per_sec_p10: float
    images_per_sec_p90: float
    input_wait_fraction: float
    train_seconds: float


def summarise_steps(
    step_seconds: Sequence[float],
    input_wait_seconds: Sequence[float],
    global_batch: int,
    window: int = DEFAULT_WINDOW,
    tolerance: float = DEFAULT_TOLERANCE,
) -> StepStats:
    """Throughput over the steady window with the p10/p90 spread of its steps, and the share of
    the window spent waiting for input.

    The steady window is the steps after warm-up, end to end: `images_per_sec` is its images
    over its length (`window_seconds`, the sum of its steps), what a training loop that never
    waits for a step gets; the spread is of single steps (`global_batch` over a step's time).
    `step_seconds[i]` must include `input_wait_seconds[i]` (the driver times both from the
    same start), so the wait fraction is a share of the whole step.
    """
    times = np.asarray(step_seconds, dtype=float)
    waits = np.asarray(input_wait_seconds, dtype=float)
    if len(times) == 0:
        raise ValueError("no steps were timed")
    if len(waits) != len(times):
        raise ValueError("step and input-wait series differ in length")
    warmup = detect_warmup(times, window, tolerance)
    steady = times[warmup.steps :]
    median_step = float(np.median(steady))
    p10_step, p90_step = (float(v) for v in np.percentile(steady, [10, 90]))
    return StepStats(
        warmup_steps=warmup.steps,
        warmup_detected=warmup.detected,
        warmup_seconds=float(times[: warmup.steps].sum()),
        steady_steps=len(steady),
        median_step_seconds=median_step,
        window_seconds=float(steady.sum()),
        images_per_sec=global_batch * len(steady) / float(steady.sum()),
        images_per_sec_p10=global_batch / p90_step,
        images_per_sec_p90=global_batch / p10_step,
        input_wait_fraction=float(waits[warmup.steps :].sum() / steady.sum()),
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
