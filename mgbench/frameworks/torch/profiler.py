"""torch.profiler around a profiled window: one function for every adapter that trains in PyTorch
(pytorch, horovod, keras-torch), so their traces hold the same activities and step marks and
are read by the same code (`trace_events.torch_trace_window`).

The op summary is read from the exported trace, not from `key_averages()` (which builds a tree
of Python objects for every event and took longer than the profiled steps themselves) nor from
the profiler's in-memory events (private, and their methods differ between torch versions).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch

from mgbench.common.trace_events import STEP_MARK


def profile_with_torch(run_steps: Callable[..., None], trace_path: Path, use_cuda: bool) -> None:
    """`run_steps` under torch.profiler (CPU, and CUDA activity on GPU), each step inside a
    `record_function` span named STEP_MARK: a Chrome trace at `trace_path`."""
    activities = [torch.profiler.ProfilerActivity.CPU]
    if use_cuda:
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities) as profiler:
        run_steps(lambda: torch.profiler.record_function(STEP_MARK))
    profiler.export_chrome_trace(str(trace_path))
