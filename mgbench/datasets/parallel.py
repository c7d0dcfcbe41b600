"""Per-file work in worker processes, with progress: what `prepare` and the sample writer share."""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any

import psutil

from mgbench.core.errors import UsageError

ProgressCallback = Callable[[int, int], None]
MAX_CHUNK = 16
CHUNKS_PER_WORKER = 64
"""Jobs travel to the workers in chunks of up to MAX_CHUNK, small enough that each worker gets
about CHUNKS_PER_WORKER of them: tiny jobs (20,000 sample images) pay little in messages."""
PR_SET_PDEATHSIG = 1
"""prctl(2)'s option: the signal the kernel sends this process when its parent ends."""
STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def check_workers(workers: int | None) -> None:
    """Refuse a count below 1 before anything is written: the process pool would raise only
    once the writer had claimed its destination, and as a traceback."""
    if workers is not None and workers < 1:
        raise UsageError(f"--workers must be at least 1, got {workers}")


@contextmanager
def stop_signals_held() -> Iterator[None]:
    """Ctrl-C and SIGTERM held back (blocked) in the block, which starts the workers. A forked
    worker inherits the parent's Python handlers, which raise KeyboardInterrupt: one raised in
    the worker before its initializer ran would unwind the parent's copied stack and run the
    parent's code (the command line's main) in the worker. Forked in the block, the worker starts
    with both blocked, and `start_worker` sets their handling before letting them through; one
    that reaches the parent meanwhile is delivered at the block's end."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def start_worker(creator: int) -> None:
    """Pool initializer. The worker ignores SIGINT (a terminal sends Ctrl-C to the whole process
    group; the parent decides), dies of SIGTERM (how the parent stops it), and, on Linux, dies
    with its parent however the parent ends: a worker outliving a SIGKILLed parent waits on the
    job queue forever, adopted by PID 1. The kernel's death signal follows the process (or, with
    forkserver, the server, which ends with `creator`) that started the worker; one gone before
    the signal was asked for is caught here."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    if sys.platform == "linux":
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    try:
        gone = psutil.Process(creator).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        gone = True
    if gone:
        os._exit(1)


def map_with_progress(
    function: Callable[..., Any],
    arguments: Sequence[tuple[Any, ...]],
    workers: int | None = None,
    on_progress: ProgressCallback = lambda done, total: None,
) -> list[Any]:
    """`function(*args)` for every tuple, in worker processes; results in the input's order.
    `on_progress(done, total)` after each one, counted in that order.

    Ctrl-C (or SIGTERM, which the command line raises as KeyboardInterrupt) stops it at once:
    the parent ignores any further Ctrl-C, terminates the workers, whatever they are in the
    middle of, and passes the exception on; so does any other exception. Leaving the pool
    otherwise waits for every queued job (~20 s), or for ever on a job that never ends.
    """
    workers = workers or os.cpu_count() or 1
    chunk = max(1, min(MAX_CHUNK, len(arguments) // (workers * CHUNKS_PER_WORKER)))
    others = set(multiprocessing.active_children())
    with ProcessPoolExecutor(workers, initializer=start_worker, initargs=(os.getpid(),)) as pool:
        results = []
        try:
            with stop_signals_held():  # pool.map submits every job, which starts the workers
                mapped = pool.map(function, *zip(*arguments), chunksize=chunk)
            for result in mapped:
                results.append(result)
                on_progress(len(results), len(arguments))
        except BaseException as error:
            if isinstance(error, KeyboardInterrupt):
                signal.signal(signal.SIGINT, signal.SIG_IGN)
            for worker in set(multiprocessing.active_children()) - others:
                worker.terminate()
            pool.shutdown(cancel_futures=True)
            raise
    return results
