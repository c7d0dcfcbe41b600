"""Per-step times of a timed window, taken so that measuring costs the framework as little as it can.

A training loop never waits for the device after each step: the host queues step k+1 while the
device runs step k, and an eager framework that launches many small kernels depends on that
overlap. Synchronising after every step (and reading the loss, a device-to-host copy and, under
DDP, an all-reduce) takes it away. So the driver synchronises once, at the end of the window,
and takes each step's time from what the adapter's `StepTimer` can tell without waiting:

- `cuda events` (`frameworks.pytorch.timing.CudaEventTimer`): an event recorded on the device's
  stream after each step; the device stamps it when it gets there, so the difference of two
  events is a step's length on the device's clock, idle gaps included, read after the window.
- `per-step sync` (this module's `StepTimer`, every framework without device events): the host
  waits for the devices after each step and reads its clock. It is what the driver does
  everywhere when MGBENCH_STEP_SYNC=1 (to measure what the synchronisation costs), and in the
  profiled window, whose length on the host clock must hold all of its steps' device work.

Either way the row's throughput is the images of the steady steps over the length of those
steps end to end (`timing.summarise_steps`), and warm-up detection gets one time per step.
"""

from __future__ import annotations

import os
from collections.abc import Callable

Clock = Callable[[], float]
FORCE_SYNC_ENV = "MGBENCH_STEP_SYNC"
PER_STEP_SYNC = "per-step sync"


def step_sync_forced() -> bool:
    """MGBENCH_STEP_SYNC=1: every adapter's steps synchronised (the cost of synchronising measured)."""
    return os.environ.get(FORCE_SYNC_ENV, "") not in ("", "0")


class StepTimer:
    """Per-step sync: after each step the host waits for the devices, then reads `clock`."""

    method = PER_STEP_SYNC

    def __init__(self, synchronize: Callable[[], None], clock: Clock):
        self.synchronize = synchronize
        self.clock = clock
        self.marks: list[float] = []

    def start(self) -> None:
        """The window begins (the devices are idle: the driver synchronised before it)."""
        self.marks = [self.clock()]

    def mark(self) -> None:
        """A step has been handed to the framework."""
        self.synchronize()
        self.marks.append(self.clock())

    def step_seconds(self) -> list[float]:
        """Each step's seconds since the window began; called once the window has been synchronised."""
        return [end - start for start, end in zip(self.marks, self.marks[1:])]
