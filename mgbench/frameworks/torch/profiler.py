"""torch.profiler around a profiled window: one function for every adapter that trains in PyTorch
(pytorch, horovod, keras-torch), so their traces hold the same activities and step marks and
are read by the same code (`trace_events.torch_trace_window`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch

from mgbench.common.protocol import OpTime
from mgbench.common.trace_events import STEP_MARK


def profile_with_torch(run_steps: Callable[..., None], trace_path: Path, use_cuda: bool) -> tuple[list[OpTime], str]:
    """`run_steps` under torch.profiler (CPU, and CUDA activity on GPU), each step inside a
    `record_function` span named STEP_MARK: a Chrome trace at `trace_path`, and self time per
    op (device time on GPU, CPU time otherwise)."""
    activities = [torch.profiler.ProfilerActivity.CPU]
    if use_cuda:
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities) as profiler:
        run_steps(lambda: torch.profiler.record_function(STEP_MARK))
    profiler.export_chrome_trace(str(trace_path))
    clock = "device" if use_cuda else "cpu"
    attribute = "self_device_time_total" if use_cuda else "self_cpu_time_total"
    ops = [OpTime(e.key, getattr(e, attribute) / 1e6, e.count) for e in profiler.key_averages()]
    return ops, clock
