"""Loader sizing shared by the adapters' native loaders."""

from __future__ import annotations

import os


def loader_workers(requested: int | None, processes_on_host: int) -> int:
    """Worker processes per training process: as asked, else this host's CPUs shared out evenly,
    less one for the training process itself.

    Decoding and augmenting images is the CPU work that starves GPUs, so by default the cores
    decode; but an eager training process is itself host-bound (its thread launches every
    kernel, and receives and pins each batch), and a worker scheduled on its core slows every
    step, so each training process keeps a core.
    """
    if requested is not None:
        return requested
    return max(1, len(os.sched_getaffinity(0)) // max(1, processes_on_host) - 1)
