"""Per-step times from CUDA events: no host synchronisation inside the timed window.

An event recorded on the device's current stream after each step is stamped by the device when
its queue reaches it, so the time between two events is one step as the device lived it: its
kernels and whatever idle gap the host left before them. Recording is asynchronous; the events
are read once the driver has synchronised at the window's end (`mgbench.measure.step_timer`).
"""

from __future__ import annotations

import torch

from mgbench.measure.step_timer import Clock, StepTimer

MILLISECONDS = 1e-3


class CudaEventTimer(StepTimer):
    """`cuda events`: one timing event on the device's stream per step, read after the window."""

    method = "cuda events"

    def __init__(self, device: torch.device, clock: Clock):
        super().__init__(lambda: None, clock)
        self.device = device
        self.events: list[torch.cuda.Event] = []

    def _record(self) -> None:
        event = torch.cuda.Event(enable_timing=True)
        event.record(torch.cuda.current_stream(self.device))
        self.events.append(event)

    def start(self) -> None:
        self.events = []
        self._record()

    def mark(self) -> None:
        self._record()

    def step_seconds(self) -> list[float]:
        return [start.elapsed_time(end) * MILLISECONDS for start, end in zip(self.events, self.events[1:])]
