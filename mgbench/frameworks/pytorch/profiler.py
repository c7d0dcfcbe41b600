"""torch.profiler around a profiled window: one function for every adapter that trains in PyTorch
(pytorch, horovod, keras-torch), so their traces hold the same activities and are read by the
same code (`trace_events.torch_trace_window`).

On GPU it records CUDA activity only. The breakdown needs the device's work per step (kernels
and copies), not the host's operators; recording every operator the host launches slows the
host, and an eager step's pace is the host's, so with CPU activity the profiled steps ran
longer than the timed ones and the trace, its export and its reading grew with every operator
(BENCHMARKS.md). Without host operators there are no step marks: the steps are synchronised,
so all the device's work lies in the window the host clocked, which is what the breakdown
divides by its steps. On CPU the operators are the work, and each step is marked.

The op summary is read from the exported trace, not from `key_averages()` (which builds a tree
of Python objects for every event and took longer than the profiled steps themselves) nor from
the profiler's in-memory events (private, and their methods differ between torch versions).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch

from mgbench.measure.trace_events import STEP_MARK


def profile_with_torch(run_steps: Callable[..., None], trace_path: Path, use_cuda: bool) -> None:
    """`run_steps` under torch.profiler: CUDA activity on GPU (the window on the host's clock),
    CPU activity with each step inside a `record_function` span named STEP_MARK otherwise; a
    Chrome trace at `trace_path`."""
    if use_cuda:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as profiler:
            run_steps()
    else:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profiler:
            run_steps(lambda: torch.profiler.record_function(STEP_MARK))
    profiler.export_chrome_trace(str(trace_path))
