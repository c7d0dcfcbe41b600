"""Where a profiled step's time goes on one device, from busy intervals alone.

Input: what the device ran, as (start, end, kind) intervals in seconds, and the spans of the
profiled steps on the same clock. Every kind of work is first merged into a union (kernels of
one kind overlap across streams), then each category takes only the time no category before
it already holds, so nothing is counted twice:

- compute: the union of compute kernels (and other copies: device-to-device, device-to-host,
  memsets are the step's own memory work);
- communication (exposed): the union of collective kernels minus compute: a collective
  running beside a compute kernel costs no step time;
- host_to_device (exposed): input copies minus compute and communication;
- idle: the window minus the union of everything: the device had nothing to run.

`step_shares` adds the host's input wait: while the host blocks on the next batch the device
has finished the synchronised step and runs nothing, so the wait is carved out of idle. When
the wait is longer than the idle time (a copy ran during it), all five are scaled by their sum
so that they still add to 1. `timed_step_shares` gives the same shares of the measured step
rather than of the profiled one, which the profiler itself may have lengthened.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, TypeGuard

from mgbench.measure.timing import HOST_PHASES

COMPUTE = "compute"
COMMUNICATION = "communication"
HOST_TO_DEVICE = "host_to_device"
OTHER_COPY = "other_copy"

INPUT_WAIT = "input_wait"
IDLE = "idle"
CATEGORIES = (INPUT_WAIT, HOST_TO_DEVICE, COMPUTE, COMMUNICATION, IDLE)
"""The step's shares, in the order charts stack them."""
COMPUTE_BOUND = 0.8
"""A step with at least this share in compute is compute-bound unless another share is material."""
MATERIAL = 0.1
"""A share other than compute this large holds the step back, whatever compute's share."""
NOTE_FROM = 0.02
"""The next largest share from this size is named beside the label (`bottleneck_note`)."""
BOUND_LABELS = {
    COMPUTE: "compute-bound",
    IDLE: "host-bound",
    INPUT_WAIT: "input-bound",
    HOST_TO_DEVICE: "copy-bound",
    COMMUNICATION: "communication-bound",
}
"""What each bottleneck category means for the row: idle device time is the host's (Python,
launches, synchronisation), input wait the pipeline's, exposed copies the host-to-device link's."""

Span = tuple[float, float]
Interval = tuple[float, float, str]


def union(spans: Iterable[Span]) -> list[Span]:
    """Sorted, disjoint spans covering exactly what `spans` cover."""
    merged: list[Span] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def length(spans: Iterable[Span]) -> float:
    return sum((end - start for start, end in spans), 0.0)


def intersect(a: list[Span], b: list[Span]) -> list[Span]:
    """Where two unions (sorted, disjoint) overlap."""
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        start, end = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if start < end:
            out.append((start, end))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def subtract(a: list[Span], b: list[Span]) -> list[Span]:
    """What the union `a` covers and the union `b` does not (one pass over both)."""
    out, first = [], 0
    for start, end in a:
        while first < len(b) and b[first][1] <= start:
            first += 1
        cut = first
        while cut < len(b) and b[cut][0] < end:
            if b[cut][0] > start:
                out.append((start, b[cut][0]))
            start = max(start, b[cut][1])
            cut += 1
        if start < end:
            out.append((start, end))
    return out


@dataclass(frozen=True)
class DeviceTimes:
    """Seconds of one device over a profiled window (all steps together)."""

    window: float
    compute: float
    communication: float
    host_to_device: float
    idle: float

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


def clip(intervals: Iterable[Interval], window: list[Span]) -> list[Interval]:
    """The parts of `intervals` inside the window's spans (work before or after the profiled
    steps is not theirs). A trace holds tens of thousands of intervals and most lie wholly in
    one step: those are kept as they are; the others are intersected only with the spans that
    can overlap them, found by bisection."""
    spans = union(window)
    starts = [start for start, _ in spans]
    inside = []
    for start, end, kind in intervals:
        first = max(bisect_right(starts, start) - 1, 0)
        if spans and spans[first][0] <= start < end <= spans[first][1]:
            inside.append((start, end, kind))
            continue
        nearby = spans[first : bisect_left(starts, end)]
        inside.extend((s, e, kind) for s, e in intersect([(start, end)], nearby))
    return inside


def device_times(intervals: Iterable[Interval], window: list[Span]) -> DeviceTimes:
    """Compute, exposed communication, exposed host-to-device copies and idle time inside `window`."""
    spans = union(window)
    inside = clip(intervals, spans)

    def covered(*kinds: str) -> list[Span]:
        return union((start, end) for start, end, kind in inside if kind in kinds)

    compute = covered(COMPUTE, OTHER_COPY)
    collectives = covered(COMMUNICATION)
    copies = covered(HOST_TO_DEVICE)
    communication = subtract(collectives, compute)
    host_to_device = subtract(copies, union(compute + collectives))
    busy = union(compute + collectives + copies)
    window_seconds = length(spans)
    return DeviceTimes(
        window=window_seconds,
        compute=length(compute),
        communication=length(communication),
        host_to_device=length(host_to_device),
        idle=window_seconds - length(busy),
    )


def step_shares(times: DeviceTimes, input_wait_seconds: float) -> dict[str, float]:
    """The five shares of the step (summing to 1), input wait carved out of idle (module doc)."""
    seconds = {
        INPUT_WAIT: input_wait_seconds,
        HOST_TO_DEVICE: times.host_to_device,
        COMPUTE: times.compute,
        COMMUNICATION: times.communication,
        IDLE: max(times.idle - input_wait_seconds, 0.0),
    }
    total = sum(seconds.values())
    if total <= 0:
        raise ValueError("the profiled window is empty: no step time to split")
    return {name: seconds[name] / total for name in CATEGORIES}


@dataclass(frozen=True)
class TimedStep:
    """The measured step a breakdown describes: the timed steps' median seconds and the input
    wait in it (the row's `median_step_seconds` times its `input_wait_fraction`)."""

    seconds: float
    input_wait: float


def timed_step_shares(times: DeviceTimes, steps: int, step: TimedStep) -> dict[str, float]:
    """The five shares of the timed step, from a window of `steps` profiled steps.

    A profiler records every operator the host launches, which slows the host: where the host
    sets the pace (eager steps of many small kernels) the profiled steps are longer than the
    timed ones and their extra length is idle device time that the timed step does not have.
    The device's work per step (kernels and copies, which run as long whether the host is
    profiled or not) is the window's divided by its steps; the timed step's idle time is what
    of its length that work leaves. Shares as `step_shares`, of the timed step.
    """
    compute, communication, copies = (
        seconds / steps for seconds in (times.compute, times.communication, times.host_to_device)
    )
    work = DeviceTimes(
        window=step.seconds,
        compute=compute,
        communication=communication,
        host_to_device=copies,
        idle=max(step.seconds - compute - communication - copies, 0.0),
    )
    return step_shares(work, step.input_wait)


def mean_shares(per_device: Iterable[dict[str, float]]) -> dict[str, float]:
    """A run's breakdown: each share averaged over its devices, i.e. how all devices' time splits
    (in lock-step data parallelism every device's window is the same step)."""
    devices = list(per_device)
    if not devices:
        raise ValueError("no device to average")
    return {name: sum(device[name] for device in devices) / len(devices) for name in CATEGORIES}


def has_shares(value: object, names: Iterable[str]) -> TypeGuard[dict[str, Any]]:
    """Whether `value` holds a number for each of `names`: a share written as null (no value, the
    row's `warnings` say why; NaN in a frame's column) leaves the row without that split rather
    than half of one."""
    return isinstance(value, dict) and all(
        isinstance(share := value.get(name), int | float) and not math.isnan(share) for name in names
    )


def has_breakdown(value: object) -> TypeGuard[dict[str, Any]]:
    """Whether `value` is a whole breakdown (`CATEGORIES`): a row's, or a frame's cell of it."""
    return has_shares(value, CATEGORIES)


def bottleneck(shares: dict[str, float], categories: Sequence[str] = CATEGORIES, work: str = COMPUTE) -> str:
    """The category holding the step back: `work` (compute) when it holds at least COMPUTE_BOUND
    of the step and no other share is MATERIAL, else the largest share other than it.

    So a step of 88% compute and 6% idle is compute-bound (removing all the idle time would
    gain 7%), one of 83% compute and 14% idle is host-bound, and wherever compute is under
    COMPUTE_BOUND the largest of what is not compute is what stands between the row and its
    device-busy ceiling (`device_ceiling`). Host timing's phases take the same rule with the
    step call as the work (`host_bottleneck`)."""
    largest = max((name for name in categories if name != work), key=lambda name: shares[name])
    if shares[work] >= COMPUTE_BOUND and shares[largest] < MATERIAL:
        return work
    return largest


def host_bottleneck(shares: dict[str, float]) -> str:
    """`bottleneck`'s rule on host timing (`timing.HOST_PHASES`), the step call in compute's
    place, so a row read from its host's clock names its bottleneck as a profiled one does."""
    return bottleneck(shares, HOST_PHASES, "step")


def bottleneck_note(shares: dict[str, float]) -> str | None:
    """`idle 6% next`: the largest share besides compute and the bottleneck, where it is at
    least NOTE_FROM (so a compute-bound row says what else it spends on); None otherwise."""
    named = bottleneck(shares)
    rest = [name for name in CATEGORIES if name not in (COMPUTE, named)]
    largest = max(rest, key=lambda name: shares[name])
    return f"{largest} {shares[largest]:.0%} next" if shares[largest] >= NOTE_FROM else None


@dataclass(frozen=True)
class Ceiling:
    """The throughput if nothing but the device's own work set the pace, and what holds the
    measured throughput under it."""

    samples_per_sec: float
    taken: dict[str, float]
    """Images/sec taken from the ceiling by `host` (idle), `input` (input wait, exposed copies),
    `communication` (exposed collectives), each at its share of the timed step, and
    `uneven_steps`: the steady window's throughput below the median step's (slower steps in the
    window). They sum to the ceiling minus the measured throughput."""


CEILING_PARTS = {"host": (IDLE,), "input": (INPUT_WAIT, HOST_TO_DEVICE), "communication": (COMMUNICATION,)}


def device_ceiling(
    global_batch: int, step_seconds: float, samples_per_sec: float, shares: dict[str, float]
) -> Ceiling | None:
    """`global_batch` over the device's compute per step (compute's share of the timed step of
    `step_seconds`, the median), and what takes the measured `samples_per_sec` under it (None
    where the step has no compute)."""
    compute = shares[COMPUTE] * step_seconds
    if compute <= 0:
        return None
    ceiling = global_batch / compute
    taken = {part: ceiling * sum(shares[name] for name in names) for part, names in CEILING_PARTS.items()}
    taken["uneven_steps"] = global_batch / step_seconds - samples_per_sec
    return Ceiling(ceiling, taken)
