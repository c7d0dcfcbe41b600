"""Per-file work in worker processes, with progress: what `prepare` and the sample writer share."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from mgbench.common.errors import UsageError

ProgressCallback = Callable[[int, int], None]
MAX_CHUNK = 16
CHUNKS_PER_WORKER = 64
"""Jobs travel to the workers in chunks of up to MAX_CHUNK, small enough that each worker gets
about CHUNKS_PER_WORKER of them: tiny jobs (20,000 sample images) pay little in messages, and an
interrupted pool, which finishes the chunks already handed out (about two per worker), stops
within a second or so."""


def check_workers(workers: int | None) -> None:
    """Refuse a count below 1 before anything is written: the process pool would raise only
    once the writer had claimed its destination, and as a traceback."""
    if workers is not None and workers < 1:
        raise UsageError(f"--workers must be at least 1, got {workers}")


def map_with_progress(
    function: Callable[..., Any],
    arguments: Sequence[tuple[Any, ...]],
    workers: int | None = None,
    on_progress: ProgressCallback = lambda done, total: None,
) -> list[Any]:
    """`function(*args)` for every tuple, in worker processes; results in the input's order.
    `on_progress(done, total)` after each one, counted in that order.

    Ctrl-C stops it at once: the workers ignore SIGINT (a terminal sends it to them too); the
    parent cancels the jobs not started, waits for the few chunks the workers hold, ignores any
    further Ctrl-C while it winds down, and passes the KeyboardInterrupt on. Leaving the pool
    otherwise waits for every queued job (~20 s), and a second Ctrl-C in that wait hung the
    process and its workers.
    """
    workers = workers or os.cpu_count() or 1
    chunk = max(1, min(MAX_CHUNK, len(arguments) // (workers * CHUNKS_PER_WORKER)))
    with ProcessPoolExecutor(workers, initializer=signal.signal, initargs=(signal.SIGINT, signal.SIG_IGN)) as pool:
        results = []
        try:
            for result in pool.map(function, *zip(*arguments), chunksize=chunk):
                results.append(result)
                on_progress(len(results), len(arguments))
        except BaseException as error:
            if isinstance(error, KeyboardInterrupt):
                signal.signal(signal.SIGINT, signal.SIG_IGN)
            pool.shutdown(cancel_futures=True)
            raise
    return results
