"""What a compare shows while it runs: bars on a terminal, plain lines in a pipe or a log.

On a terminal: an overall bar (runs done of all, elapsed, time left) and the current run's step
bar with its phase and latest rate. In a pipe or a log: one line when a run starts (its name and
log file) and one when it ends (status, rate, wall time), an out-of-memory retry when it happens,
and a heartbeat line every `HEARTBEAT_ENV` seconds (default 60, at least `MIN_HEARTBEAT_SECONDS`)
while a run works, with its phase and the compare's time left.

Both read the run's progress from its log (`logs/<run>.log`), where the worker prints a
`step N/M: R img/s` line every tenth of its steps and a `phase: NAME` line as it enters a phase
(`training.driver.announce`): no second channel between worker and CLI. Every rate is shown in
the unit the model declares (`RateUnit`): img/s for an image model, tokens/s for a language
model, as the worker's step line names it. The time left is the compare's clock's
(`runner.estimate.CompareClock`), which hears the same events.
"""

from __future__ import annotations

import argparse
import os
import re
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from mgbench.cli.values import positive_seconds
from mgbench.core.config import RunConfig
from mgbench.core.errors import UsageError
from mgbench.measure.phases import STARTUP, STEADY
from mgbench.records.results import RunResult
from mgbench.runner.estimate import CompareClock, duration_text
from mgbench.runner.orchestrator import RunEvent
from mgbench.training.driver import PHASE_MARK

HEARTBEAT_ENV = "MGBENCH_HEARTBEAT_SECONDS"
DEFAULT_HEARTBEAT_SECONDS = 60.0
MIN_HEARTBEAT_SECONDS = 1.0
"""The shortest heartbeat: a smaller `HEARTBEAT_ENV` is taken as this (1e-9 printed tens of
thousands of lines for a run of seconds)."""
REFRESH_SECONDS = 0.5
STEP_LINE = re.compile(r"step (\d+)/(\d+): ([\d.]+) (\S+/s)")
EPOCH_LINE = re.compile(r"^epoch \d+/\d+: ")


@dataclass(frozen=True)
class StepProgress:
    done: int
    total: int
    rate: float
    """The latest rate as the step line gives it, in `unit` (`img/s`, `tokens/s`)."""
    unit: str

    @property
    def text(self) -> str:
        return f"{self.rate:.1f} {self.unit}"


class RunLog:
    """What a run's log says so far: its phase and its latest step line, read as the log grows
    (only the bytes added since the last read)."""

    def __init__(self, path: Path):
        self.path = path
        self.offset = 0
        self.partial = ""
        self.phase = STARTUP
        self.step: StepProgress | None = None

    def read(self) -> RunLog:
        try:
            with self.path.open("rb") as handle:
                handle.seek(self.offset)
                added = handle.read()
        except OSError:
            return self
        self.offset += len(added)
        lines = (self.partial + added.decode(errors="replace")).split("\n")
        self.partial = lines.pop()
        for line in lines:
            self._take(line.strip())
        return self

    def _take(self, line: str) -> None:
        """A line of the log: a phase mark names the phase; a step line, or an epoch's line after
        its validation, means steps are running (steady once a step line came after warm-up)."""
        if line.startswith(PHASE_MARK):
            self.phase = line.removeprefix(PHASE_MARK)
        elif match := STEP_LINE.search(line):
            done, total, rate, unit = match.groups()
            self.step, self.phase = StepProgress(int(done), int(total), float(rate), unit), STEADY
        elif EPOCH_LINE.match(line):
            self.phase = STEADY


def heartbeat_seconds() -> float:
    """`HEARTBEAT_ENV`'s seconds (default 60, `MIN_HEARTBEAT_SECONDS` at least): a positive
    number, else one UsageError. Compare reads it before anything is written: `abc` would end the
    progress thread in a traceback, and `0`, `-1` or `nan` print a line on every turn of its loop."""
    text = os.environ.get(HEARTBEAT_ENV)
    if text is None:
        return DEFAULT_HEARTBEAT_SECONDS
    try:
        return max(MIN_HEARTBEAT_SECONDS, positive_seconds(text))
    except argparse.ArgumentTypeError as error:
        raise UsageError(f"{HEARTBEAT_ENV}: {error}") from None


def run_name(config: RunConfig, round_label: str = "") -> str:
    """`fake steady x2`, with its round where the compare runs several (`fake steady x2, round 2/3`)."""
    return f"{config.framework} {config.strategy} x{config.devices}" + (f", {round_label}" if round_label else "")


def ending(result: RunResult, seconds: float, round_label: str = "") -> str:
    """`ok fake steady x2: 63.9 img/s, 3.2 s` (a language model's in tokens/s) or `oom ...: first
    line of the error, 3.2 s`."""
    if result.status == "ok" and result.timing.samples_per_sec is not None:
        unit = result.config.job.input.unit
        what = f"{unit.of(result.timing.samples_per_sec):.1f} {unit.label}"
    else:
        what = (result.error or "").splitlines()[0] if result.error else ""
    return f"{result.status} {run_name(result.config, round_label)}: {what}, {seconds:.1f} s"


class LiveCompare(ABC):
    """Listens to the orchestrator (`on_event`, `on_result`) and passes what it hears to the
    compare's `clock`; a thread keeps the display moving."""

    def __init__(self, console: Console, total: int, clock: CompareClock):
        self.console = console
        self.total = total
        self.clock = clock
        self.done = 0
        self.current: RunEvent | None = None
        self.log: RunLog | None = None
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="mgbench-progress", daemon=True)

    def __enter__(self) -> LiveCompare:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def on_event(self, event: RunEvent) -> None:
        with self._lock:
            if event.kind == "start":
                self.started = time.monotonic()
            self.current, self.log = event, RunLog(event.log)
            self.clock.on_event(event)
        self.show_event(event)

    def on_result(self, result: RunResult) -> None:
        with self._lock:
            self.clock.on_result(result)
            self.done += 1
            round_label = self.current.round if self.current else ""
            self.current = None
        self.show_result(result, time.monotonic() - self.started, round_label)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval()):
            with self._lock:
                current, log = self.current, self.log
                left = self.clock.left().seconds
            if current is not None and log is not None:
                self.tick(current, time.monotonic() - self.started, log.read(), left)

    def interval(self) -> float:
        return REFRESH_SECONDS

    @abstractmethod
    def show_event(self, event: RunEvent) -> None:
        """A run started or restarts."""

    @abstractmethod
    def show_result(self, result: RunResult, seconds: float, round_label: str) -> None:
        """A run's round ended after `seconds` (its row is written)."""

    @abstractmethod
    def tick(self, event: RunEvent, seconds: float, log: RunLog, left: float) -> None:
        """Every `interval()` while the run of `event` works, `seconds` after it started: what its
        `log` says so far, and the compare's estimated seconds `left`."""


class PlainLines(LiveCompare):
    """For a pipe or a log: whole lines only, each saying which run and how far."""

    def __init__(self, console: Console, total: int, clock: CompareClock):
        super().__init__(console, total, clock)
        self.heartbeat = heartbeat_seconds()

    def interval(self) -> float:
        return self.heartbeat

    def position(self) -> str:
        return f"[{min(self.done + 1, self.total)}/{self.total}]"

    def show_event(self, event: RunEvent) -> None:
        if event.kind == "start":
            self.console.print(
                f"{self.position()} start {run_name(event.config, event.round)} (log: {event.log})", highlight=False
            )
        else:
            self.console.print(
                f"{self.position()} out of memory: {run_name(event.config, event.round)} restarts with "
                f"{event.config.job.batch_per_device} per device",
                highlight=False,
            )

    def show_result(self, result: RunResult, seconds: float, round_label: str) -> None:
        self.console.print(f"[{self.done}/{self.total}] {ending(result, seconds, round_label)}", highlight=False)

    def tick(self, event: RunEvent, seconds: float, log: RunLog, left: float) -> None:
        step = log.step
        where = f", step {step.done}/{step.total}, {step.text}" if step else ""
        self.console.print(
            f"{self.position()} running {run_name(event.config, event.round)}: {seconds:.0f} s, {log.phase}, "
            f"about {duration_text(left)} left{where}",
            highlight=False,
        )


class Bars(LiveCompare):
    """For a terminal: the overall bar and the current run's step bar, redrawn in place."""

    def __init__(self, console: Console, total: int, clock: CompareClock):
        super().__init__(console, total, clock)
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[rate]}"),
            console=console,
        )
        left = f"about {duration_text(clock.estimate.seconds)} left"
        self.overall = self.progress.add_task("runs", total=total, rate=left)
        self.run = self.progress.add_task("steps", total=None, rate="", visible=False)

    def __enter__(self) -> Bars:
        self.progress.start()
        return super().__enter__()  # type: ignore[return-value]

    def __exit__(self, *exc: object) -> None:
        super().__exit__(*exc)
        self.progress.stop()

    def show_event(self, event: RunEvent) -> None:
        self.progress.reset(
            self.run, total=None, description=run_name(event.config, event.round), rate="", visible=True
        )
        if event.kind == "retry":
            batch = event.config.job.batch_per_device
            self.progress.console.print(f"out of memory: {run_name(event.config)} restarts with {batch} per device")

    def show_result(self, result: RunResult, seconds: float, round_label: str) -> None:
        self.progress.console.print(ending(result, seconds, round_label), highlight=False)
        self.progress.update(self.overall, completed=self.done)
        self.progress.update(self.run, visible=False)

    def tick(self, event: RunEvent, seconds: float, log: RunLog, left: float) -> None:
        self.progress.update(self.overall, rate=f"about {duration_text(left)} left")
        self.progress.update(self.run, description=f"{run_name(event.config, event.round)} ({log.phase})")
        if log.step is not None:
            step = log.step
            self.progress.update(self.run, completed=step.done, total=step.total, rate=step.text)


@contextmanager
def live_compare(console: Console, total: int, clock: CompareClock) -> Iterator[LiveCompare]:
    """Bars when `console` is a terminal, plain lines otherwise; both tell `clock` what they hear."""
    display = Bars(console, total, clock) if console.is_terminal else PlainLines(console, total, clock)
    with display:
        yield display
