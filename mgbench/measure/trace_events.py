"""Profiler traces (Chrome trace format) read as what each device ran, and when the steps ran.

Two layouts, so that every framework on one profiler counts device time the same way:
- torch.profiler (Kineto): GPU work is the events of category `kernel`, `gpu_memcpy` and
  `gpu_memset`, each naming its GPU in `args.device`; a CPU-only trace has the operators
  (`cpu_op`) and, on the gloo threads, the collectives (`user_annotation` such as
  `gloo:all_reduce`).
- XLA (JAX's profiler): on GPU one process per device (`/device:GPU:N`) whose stream lines hold
  the kernels and copies; on CPU the XLA ops host threads ran, tagged with the device ordinal.

Each event becomes an interval of one kind (`breakdown`'s compute, communication, host-to-device
or other copy) by its name: NCCL and other collectives are communication, host-to-device copies
(`Memcpy HtoD`, `MemcpyH2D`) are input copies, other copies and memsets are the step's own memory
work. Where the adapter hands its profiler the step marker, every profiled step is a span named
STEP_MARK (see `Adapter.profile`) and those spans are the window; torch on GPU records no host
activity, so its trace has none and the window is the host's clock (`breakdown_record.window_spans`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from mgbench.measure.breakdown import COMMUNICATION, COMPUTE, HOST_TO_DEVICE, OTHER_COPY, Interval, Span

STEP_MARK = "mgbench.step"
# Not a bare "broadcast": in XLA that is an element-wise op; torch's collective is c10d's.
COMMUNICATION_MARKERS = (
    "nccl",
    "gloo",
    "allreduce",
    "all_reduce",
    "all-reduce",
    "psum",
    "allgather",
    "all_gather",
    "reduce_scatter",
    "c10d::broadcast",
)
HOST_TO_DEVICE_MARKERS = ("htod", "h2d")
"""Inside a copy's name only (`Memcpy HtoD`, `MemcpyH2D`): a kernel name may hold the letters."""
GPU_PROCESS_PREFIX = "/device:GPU:"
STREAM_LINE_PREFIX = "Stream"
TORCH_DEVICE_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
TORCH_HOST_CATEGORIES = ("cpu_op", "user_annotation")
MICROSECONDS = 1e-6


def is_communication(name: str) -> bool:
    lowered = name.lower()
    return any(marker in lowered for marker in COMMUNICATION_MARKERS)


@cache
def interval_kind(name: str) -> str:
    """What an event of this name did: a collective, an input copy, another copy, or compute
    (cached: a trace repeats a few hundred names over tens of thousands of events)."""
    lowered = name.lower()
    if is_communication(name):
        return COMMUNICATION
    if "memcpy" in lowered:
        return HOST_TO_DEVICE if any(marker in lowered for marker in HOST_TO_DEVICE_MARKERS) else OTHER_COPY
    return OTHER_COPY if "memset" in lowered else COMPUTE


def trace_names(trace: dict[str, Any]) -> tuple[dict[int, str], dict[tuple[Hashable, Hashable], str]]:
    """A Chrome trace's process names by pid and its line (thread) names by (pid, tid)."""
    meta = [e for e in trace["traceEvents"] if e.get("ph") == "M"]
    processes = {e["pid"]: e["args"]["name"] for e in meta if e["name"] == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in meta if e["name"] == "thread_name"}
    return processes, threads


def timed_events(trace: dict[str, Any]) -> list[dict[str, Any]]:
    """The events with a duration (Chrome "X" events, microseconds)."""
    return [e for e in trace["traceEvents"] if e.get("ph") == "X"]


def xla_device_events(
    trace: dict[str, Any], timed: list[dict[str, Any]] | None = None
) -> dict[str, list[dict[str, Any]]]:
    """Each device's timed events in an XLA profiler trace (`timed`: its `timed_events`, where
    the caller has them already).

    On GPU the trace has one process per device (`/device:GPU:N`) whose stream lines hold the
    kernels and copies as the GPU ran them; its other lines are summaries derived from those
    and would count the same time twice. A CPU-only trace has no device process: the XLA ops
    ran on host threads, each tagged with its device's ordinal.
    """
    processes, threads = trace_names(trace)
    timed = timed_events(trace) if timed is None else timed
    by_device: dict[str, list[dict[str, Any]]] = defaultdict(list)
    gpus = {pid: name for pid, name in processes.items() if name.startswith(GPU_PROCESS_PREFIX)}
    if gpus:
        for event in timed:
            line = threads.get((event["pid"], event.get("tid")), "")
            if event["pid"] in gpus and line.startswith(STREAM_LINE_PREFIX):
                by_device[gpus[event["pid"]]].append(event)
    else:
        for event in timed:
            args = event.get("args", {})
            if "hlo_op" in args:
                by_device[f"cpu:{args.get('device_ordinal', '0')}"].append(event)
    return dict(by_device)


def xla_clock(by_device: dict[str, Any]) -> str:
    """`device` when the XLA trace's devices are GPUs, `cpu` when host threads ran the ops."""
    return "device" if any(name.startswith(GPU_PROCESS_PREFIX) for name in by_device) else "cpu"


def event_span(event: dict[str, Any]) -> Span:
    """An event's (start, end) in seconds."""
    start = event["ts"] * MICROSECONDS
    return start, start + event.get("dur", 0) * MICROSECONDS


def event_interval(event: dict[str, Any]) -> Interval:
    return (*event_span(event), interval_kind(event["name"]))


OpSpan = tuple[Hashable, float, float, str]
"""A timed op on its line (a device stream or a host thread): `(line, start, end, name)`."""


@dataclass(frozen=True)
class TraceWindow:
    """What a trace says about the profiled window: per device its busy intervals (seconds),
    the spans of the marked steps (empty where the adapter marked none), which clock the
    intervals are: `device` (GPU kernels and copies) or `cpu` (operators run on host threads),
    and the named ops on their lines for the op summary (`profiling.self_time_ops`)."""

    clock: str
    devices: dict[str, list[Interval]]
    steps: list[Span] = field(default_factory=list)
    ops: list[OpSpan] = field(default_factory=list)


def step_spans(timed: list[dict[str, Any]], categories: tuple[str, ...] | None = None) -> list[Span]:
    """The STEP_MARK spans, in order (only of `categories` where the profiler repeats them)."""
    marks = [e for e in timed if e["name"] == STEP_MARK and (categories is None or e.get("cat") in categories)]
    return sorted(event_span(e) for e in marks)


def torch_trace_window(trace: dict[str, Any]) -> TraceWindow:
    """A torch.profiler trace: on GPU the kernels and copies per `args.device`, each op on its
    stream; otherwise the CPU operators (and gloo's collectives) as the device's work, with every
    operator and annotation on its host thread, where they nest, as the ops."""
    timed = timed_events(trace)
    steps = step_spans(timed, ("user_annotation",))
    on_gpu = [e for e in timed if e.get("cat") in TORCH_DEVICE_CATEGORIES]
    if on_gpu:
        devices: dict[str, list[Interval]] = defaultdict(list)
        for event in on_gpu:
            devices[f"cuda:{event.get('args', {}).get('device', event.get('pid'))}"].append(event_interval(event))
        return TraceWindow("device", dict(devices), steps, torch_line_ops(on_gpu))
    host = [e for e in timed if e.get("cat") in TORCH_HOST_CATEGORIES]
    work = [e for e in host if e.get("cat") == "cpu_op" or is_communication(e["name"])]
    return TraceWindow("cpu", {"cpu": [event_interval(e) for e in work]}, steps, torch_line_ops(host))


def torch_line_ops(events: list[dict[str, Any]]) -> list[OpSpan]:
    """torch.profiler events as ops on their (pid, tid) line: a stream on GPU, a thread on CPU."""
    return [((e["pid"], e.get("tid")), *event_span(e), e["name"]) for e in events]


def xla_trace_window(trace: dict[str, Any]) -> TraceWindow:
    """An XLA trace: each device's stream kernels (GPU) or XLA ops (CPU), each device's line apart as ops."""
    timed = timed_events(trace)
    by_device = xla_device_events(trace, timed)
    devices = {name: [event_interval(e) for e in events] for name, events in by_device.items()}
    ops: list[OpSpan] = [
        ((device, e.get("tid")), *event_span(e), e["name"]) for device, events in by_device.items() for e in events
    ]
    return TraceWindow(xla_clock(by_device), devices, step_spans(timed), ops)


TRACE_READERS: dict[str, Callable[[dict[str, Any]], TraceWindow]] = {
    "torch.profiler": torch_trace_window,
    "jax.profiler": xla_trace_window,
}
"""The trace reader of each profiler a registry entry can name (`Capabilities.profiler`): one
walk over the trace gives both the breakdown's intervals and the op summary's ops."""
