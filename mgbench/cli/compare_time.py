"""What a compare says of its time: the estimate before its first run, the total at its end, and
the caches its compiles start from (`--cold-cache`).

The clock itself (`runner.estimate.CompareClock`) estimates from the history of runs on this
machine and records each round in it; the live display shows its time left.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console

from mgbench.cli.output import note_to
from mgbench.runner.counting import cache_fallback
from mgbench.runner.estimate import CompareClock
from mgbench.runner.history import RunHistory
from mgbench.runner.rounds import RoundBook
from mgbench.training.compile_cache import COLD_ENV


@contextmanager
def cold_caches(asked: bool) -> Iterator[None]:
    """With `asked` (`compare --cold-cache`), `COLD_ENV` set for the block, so that every run
    launched in it compiles from empty caches of its own; the environment as it was after."""
    before = os.environ.get(COLD_ENV)
    if asked:
        os.environ[COLD_ENV] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(COLD_ENV, None)
        else:
            os.environ[COLD_ENV] = before


def compare_clock(console: Console, book: RoundBook) -> CompareClock:
    """The compare's clock, its estimate said in one line before the first run; a cache folder
    that cannot be made is said first, once (`counting.cache_fallback`)."""
    if fallback := cache_fallback():
        note_to(console)(fallback)
    clock = CompareClock(book, RunHistory.read(), cold=bool(os.environ.get(COLD_ENV)))
    console.print(clock.estimate.line(), highlight=False)
    return clock
