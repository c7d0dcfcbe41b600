"""Loader sizing shared by the adapters' native loaders."""

from __future__ import annotations

import os


def loader_workers(requested: int | None, processes_on_host: int) -> int:
    """Worker processes per training process: as asked, else this host's CPUs shared out evenly.

    Decoding and augmenting PNGs is the CPU work that starves GPUs, so by default every core
    decodes; the training processes themselves mostly wait on their devices.
    """
    if requested is not None:
        return requested
    return max(1, len(os.sched_getaffinity(0)) // max(1, processes_on_host))
