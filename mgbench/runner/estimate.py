"""A compare's time: estimated before its first run, the time left while it runs, the total at its end.

A round's time is estimated from what the same run took on this machine before (`runner.history`):
the median of its recorded rounds, those whose compile cache was as this compare's will be (cold
under `--cold-cache`, else served) where there are any. A run this machine has no record of is
guessed at `ROUGH_ROUND_SECONDS` a round, and the estimate says it is rough. While the compare
runs, a run's later rounds are estimated from its own rounds of this compare, which ran on the
same machine under the same load: the last one a cache served where there is one, so a cold first
round does not make the warm ones after it look as long.

`CompareClock` listens to the orchestrator as the live display does (`on_event`, `on_result`):
it records every ok round in the history as it ends, and counts what is left from the round
book, so a run that failed (owing no more rounds) or restarted after running out of memory
(the same round, longer) is counted as it is.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import psutil

from mgbench.records.results import RunResult
from mgbench.runner.history import Round, RunHistory
from mgbench.runner.orchestrator import RunEvent
from mgbench.runner.plan import PlannedRun
from mgbench.runner.rounds import RoundBook

ROUGH_ROUND_SECONDS = 60.0
"""A guess, not a measurement: a round of a run this machine has no record of (start-up, a
compile where the framework compiles, the steps, the evaluation). Estimates that use it say so."""


def duration_text(seconds: float) -> str:
    """`45 s`, `7 min`, `1 h 5 min`: a duration to the unit a reader plans by."""
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


def exact_duration_text(seconds: float) -> str:
    """`43.2 s`, `7 min 3 s`, `1 h 5 min 12 s`: a measured duration, to the second."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    text = f"{rest // 60} min {rest % 60} s"
    return f"{hours} h {text}" if hours else text


def typical_round(rounds: list[Round], cold: bool) -> float | None:
    """The median seconds of `rounds` whose compile cache was as the next will be (cold where
    `cold`, else not cold), of all of them where none was; None without rounds."""
    alike = [r.seconds for r in rounds if (r.compile_cache == "cold") == cold]
    pool = alike or [r.seconds for r in rounds]
    return statistics.median(pool) if pool else None


@dataclass(frozen=True)
class Estimate:
    """Seconds estimated for the rounds left, and how many of those rounds had no record (guessed)."""

    seconds: float
    rounds: int
    guessed: int

    def line(self) -> str:
        """`estimate: about 7 min (from earlier runs on this machine)`, said rough where guessed."""
        if self.guessed == 0:
            source = "from earlier runs on this machine"
        elif self.guessed == self.rounds:
            source = f"rough: no earlier run of this job on this machine, {duration_text(ROUGH_ROUND_SECONDS)} a round guessed"
        else:
            source = (
                f"rough: {self.rounds - self.guessed} of {self.rounds} rounds from earlier runs on this machine, "
                f"the other {self.guessed} guessed at {duration_text(ROUGH_ROUND_SECONDS)} each"
            )
        return f"estimate: about {duration_text(self.seconds)} ({source})"


class CompareClock:
    """The time of a compare's rounds (`book`), from `history`; `cold`: its compiles start from
    empty caches (`compare --cold-cache`)."""

    def __init__(self, book: RoundBook, history: RunHistory, cold: bool = False):
        self.book = book
        self.history = history
        self.cold = cold
        self.current: RunEvent | None = None
        self.round_started = time.monotonic()
        self.taken: dict[str, list[Round]] = {}
        """This compare's rounds so far, by run_id."""
        self.estimate = self.left()

    def owed(self, run: PlannedRun) -> int:
        """Rounds `run` still owes if every one finishes (`RoundBook.launches_left`, per run)."""
        rounds = self.book.rounds_of(run)
        if not all(result.status == "ok" for result in rounds):
            return 0
        return max(0, (1 if run.refusal else self.book.repeat) - len(rounds))

    def round_seconds(self, run: PlannedRun) -> float | None:
        """The estimate of one more round of `run` (None: no record of it; 0 for a refused run)."""
        if run.refusal:
            return 0.0
        own = self.taken.get(run.config.run_id, [])
        served = [r.seconds for r in own if r.compile_cache != "cold" or self.cold]
        if served:
            return served[-1]
        recorded = typical_round(self.history.of(run.config), self.cold)
        return recorded if recorded is not None else (own[-1].seconds if own else None)

    def left(self, now: float | None = None) -> Estimate:
        """The rounds still owed, estimated; the round running now less the time it has run."""
        seconds, rounds, guessed = 0.0, 0, 0
        for run in self.book.runs:
            owed = self.owed(run)
            if not owed:
                continue
            each = self.round_seconds(run)
            rounds += owed
            if each is None:
                guessed += owed
                each = ROUGH_ROUND_SECONDS
            seconds += owed * each
            if self.current is not None and self.current.config.run_id == run.config.run_id:
                seconds -= min(each, (now or time.monotonic()) - self.round_started)
        return Estimate(seconds, rounds, guessed)

    def on_event(self, event: RunEvent) -> None:
        if event.kind == "start":
            self.round_started = time.monotonic()
        self.current = event

    def on_result(self, result: RunResult) -> None:
        """A round ended (its row recorded in `book`): its time kept, and in the history if ok."""
        taken = Round(time.monotonic() - self.round_started, result.compiled.compile_cache)
        self.current = None
        if result.status != "ok":
            return
        self.taken.setdefault(result.run_id, []).append(taken)
        planned = [run.config for run in self.book.runs if run.config.run_id == result.run_id]
        self.history.record(planned[0] if planned else result.config, taken)  # as planned: before any OOM halving

    def total_line(self) -> str:
        """The closing line: the command's wall time, from its process's start, and the estimate."""
        total = time.time() - psutil.Process().create_time()
        rough = ", rough" if self.estimate.guessed else ""
        return f"compare took {exact_duration_text(total)} (estimated: about {duration_text(self.estimate.seconds)}{rough})"
