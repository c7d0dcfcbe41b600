"""Where a JAX step's time goes on each GPU, from the traces `--profile` writes.

For each `rank0-trace.json` given: per device and per profiled step, in milliseconds,
- window: first kernel's start to last kernel's end, over the steps;
- compute: time any non-NCCL kernel or copy other than host-to-device runs (union of
  intervals), and the sum of their durations (the sum grows if concurrent NCCL kernels slow
  them down);
- comm: sum of NCCL (collective) kernel durations, and the part of it no compute kernel overlaps (exposed);
- h2d_exposed: host-to-device copies no kernel overlaps;
- idle: window minus time anything runs, and the largest gaps (the host's turn between synced
  steps shows up as STEPS-1 of them);
and per host thread that launched an XLA program, its launch time per step (XLA's
`ExecuteThunks`: the kernels and command buffers it enqueued), which the GPU cannot run ahead of
when every step is synchronised. Also the lines found, so the trace's layout can be checked.
The interval arithmetic is `mgbench.measure.breakdown`'s, the one `--profile` runs for every row.

    python3 benchmarks/xla_trace_timeline.py STEPS TRACE [TRACE ...]
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from itertools import pairwise
from pathlib import Path

from mgbench.measure.breakdown import COMMUNICATION, COMPUTE, OTHER_COPY, device_times, union
from mgbench.measure.trace_events import event_interval, trace_names, xla_device_events


def device_breakdown(events: list[dict], steps: int) -> dict[str, float | list[float]]:
    """`breakdown.device_times` over the span from the first kernel to the last (the trace has
    no step marks of its own), per step in milliseconds, with the sums and gaps behind it."""
    intervals = [event_interval(e) for e in events]
    busy = union((start, end) for start, end, _ in intervals)
    times = device_times(intervals, [(busy[0][0], busy[-1][1])])
    gaps = sorted((b[0] - a[1] for a, b in pairwise(busy)), reverse=True)
    ms = 1e3 / steps
    return {
        "window": times.window * ms,
        "compute": times.compute * ms,
        "compute_sum": sum(end - start for start, end, kind in intervals if kind in (COMPUTE, OTHER_COPY)) * ms,
        "comm_sum": sum(end - start for start, end, kind in intervals if kind == COMMUNICATION) * ms,
        "comm_exposed": times.communication * ms,
        "h2d_exposed": times.host_to_device * ms,
        "idle": times.idle * ms,
        "kernels": len(intervals) / steps,
        "largest_gaps_ms": [round(gap * 1e3, 3) for gap in gaps[:steps]],
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
