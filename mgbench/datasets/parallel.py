"""Per-file work in worker processes, with progress: what `prepare` and the sample writer share."""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from typing import Any, Callable, Sequence

from mgbench.common.errors import UsageError

ProgressCallback = Callable[[int, int], None]


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
    `on_progress(done, total)` after each one, counted in that order."""
    with ProcessPoolExecutor(max_workers=workers) as pool:
        jobs = [pool.submit(function, *args) for args in arguments]
        results = []
        for done, job in enumerate(jobs, start=1):
            results.append(job.result())
            on_progress(done, len(jobs))
    return results
