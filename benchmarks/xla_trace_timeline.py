"""Where a JAX step's time goes on each GPU, from the traces `--profile` writes.

For each `rank0-trace.json` given: per device and per profiled step, in milliseconds,
- window: first kernel's start to last kernel's end, over the steps;
- compute: time any non-NCCL kernel or copy runs (union of intervals), and the sum of their
  durations (the sum grows if concurrent NCCL kernels slow them down);
- comm: sum of NCCL (collective) kernel durations, and the part of it no compute kernel overlaps (exposed);
- idle: window minus time anything runs, and the largest gaps (the host's turn between synced
  steps shows up as STEPS-1 of them).
and per host thread that launched an XLA program, its launch time per step (XLA's
`ExecuteThunks`: the kernels and command buffers it enqueued), which the GPU cannot run ahead of
when every step is synchronised. Also the lines found, so the trace's layout can be checked.

    python3 benchmarks/xla_trace_timeline.py STEPS TRACE [TRACE ...]
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from mgbench.common.profiling import is_communication, trace_names, xla_device_events

Interval = tuple[float, float]


def union(intervals: list[Interval]) -> list[Interval]:
    merged: list[Interval] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def length(intervals: list[Interval]) -> float:
    return sum(end - start for start, end in intervals)


def device_breakdown(events: list[dict], steps: int) -> dict[str, float | list[float]]:
    spans = [(e["ts"], e["ts"] + e["dur"], is_communication(e["name"])) for e in events]
    compute = union([(s, e) for s, e, comm in spans if not comm])
    collectives = [(s, e) for s, e, comm in spans if comm]
    busy = union([(s, e) for s, e, _ in spans])
    window = busy[-1][1] - busy[0][0]
    gaps = sorted((b[0] - a[1] for a, b in zip(busy, busy[1:])), reverse=True)
    ms = 1e-3 / steps
    return {
        "window": window * ms,
        "compute": length(compute) * ms,
        "compute_sum": sum(e - s for s, e, comm in spans if not comm) * ms,
        "comm_sum": sum(e - s for s, e in collectives) * ms,
        "comm_exposed": (length(busy) - length(compute)) * ms,
        "idle": (window - length(busy)) * ms,
        "kernels": len(spans) / steps,
        "largest_gaps_ms": [round(g / 1e3, 3) for g in gaps[:steps]],
    }


def host_launch_ms(trace: dict, steps: int) -> dict[str, float]:
    _, threads = trace_names(trace)
    launch: Counter = Counter()
    for e in trace["traceEvents"]:
        if e.get("ph") == "X" and e["name"].endswith("ExecuteThunks"):
            launch[threads.get((e["pid"], e.get("tid")), "?")] += e["dur"] / 1e3 / steps
    return dict(launch)


def main(steps: int, paths: list[str]) -> None:
    for path in paths:
        trace = json.loads(Path(path).read_text())
        lines = Counter(trace_names(trace)[1].values())
        print(path)
        print("  lines:", ", ".join(f"{name} x{count}" for name, count in sorted(lines.items())))
        for device, events in sorted(xla_device_events(trace).items()):
            row = device_breakdown(events, steps)
            figures = "  ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items())
            print(f"  {device}: {figures}")
        for thread, ms in sorted(host_launch_ms(trace, steps).items()):
            print(f"  host launch {thread}: {ms:.2f} ms per step")


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2:])
