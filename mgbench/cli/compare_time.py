"""What a compare says of its time: the estimate before its first run and the total at its end.

The clock itself (`runner.estimate.CompareClock`) estimates from the history of runs on this
machine and records each round in it; the live display shows its time left.
"""

from __future__ import annotations

from rich.console import Console

from mgbench.cli.output import note_to
from mgbench.runner.counting import cache_fallback
from mgbench.runner.estimate import CompareClock
from mgbench.runner.history import RunHistory
from mgbench.runner.rounds import RoundBook
from mgbench.training.compile_cache import cold_asked


def compare_clock(console: Console, book: RoundBook, cold: bool) -> CompareClock:
    """The compare's clock, its estimate said in one line before the first run, for runs that
    compile from empty caches where `cold` (the plan's `--cold-cache`) or the environment says so
    (`compile_cache.COLD_ENV`); a cache folder that cannot be made is said first, once
    (`counting.cache_fallback`)."""
    if fallback := cache_fallback():
        note_to(console)(fallback)
    clock = CompareClock(book, RunHistory.read(), cold=cold or cold_asked())
    console.print(clock.estimate.line(), highlight=False)
    return clock
