"""torch.profiler around a profiled window: one function for every adapter that trains in PyTorch
(pytorch, horovod, keras-torch), so their traces hold the same activities and step marks and
are read by the same code (`trace_events.torch_trace_window`).

The op summary is read from the profiler's raw events, not from `key_averages()`, which builds
a tree of Python objects for every event first and took longer than the profiled steps
themselves: it was most of the default window's cost.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import torch

from mgbench.common.profiling import self_time_ops
from mgbench.common.protocol import OpTime
from mgbench.common.trace_events import STEP_MARK, TORCH_DEVICE_CATEGORIES

HOST_ACTIVITIES = ("cpu_op", "user_annotation")
NANOSECONDS = 1e-9


def op_spans(events: Iterable[Any], use_cuda: bool) -> list[tuple[tuple[str, int, int], float, float, str]]:
    """The window's timed spans as `(line, start, end, name)`: on GPU each kernel and copy on its
    device and stream, otherwise each operator (and annotation) on its host thread."""
    activities = TORCH_DEVICE_CATEGORIES if use_cuda else HOST_ACTIVITIES
    spans = []
    for event in events:
        if event.activity_type() not in activities or event.is_async():
            continue
        line = (str(event.device_type()), event.device_index(), event.device_resource_id() or event.start_thread_id())
        start = event.start_ns() * NANOSECONDS
        spans.append((line, start, start + event.duration_ns() * NANOSECONDS, event.name()))
    return spans


def profile_with_torch(run_steps: Callable[..., None], trace_path: Path, use_cuda: bool) -> tuple[list[OpTime], str]:
    """`run_steps` under torch.profiler (CPU, and CUDA activity on GPU), each step inside a
    `record_function` span named STEP_MARK: a Chrome trace at `trace_path`, and self time per
    op (device time per kernel and copy on GPU, operators' own CPU time otherwise)."""
    activities = [torch.profiler.ProfilerActivity.CPU]
    if use_cuda:
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities) as profiler:
        run_steps(lambda: torch.profiler.record_function(STEP_MARK))
    profiler.export_chrome_trace(str(trace_path))
    ops = self_time_ops(op_spans(profiler.profiler.kineto_results.events(), use_cuda))
    return ops, "device" if use_cuda else "cpu"
