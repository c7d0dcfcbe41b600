"""A compare's closing lines: every run asked for accounted for, and the exit status with its reason.

The table and the verdict show what was measured; a reader also needs what was not. Each run that
gave fewer rounds than asked (refused before launching, failed, out of memory, timed out,
interrupted, or never reached) gets one line saying how many rounds ran and why the rest did not
(`keras-torch ddp x1: no figure: 1 of 3 rounds run: failed in round 1, not run again: ...`), runs
of one line that ended alike named together. Then one line gives the exit status and its reason
(`exit 1: 2 of 4 lines failed or are not installed: ...`).

Exit codes, as `docs/faults.md` lists them: 130 where the compare was interrupted; 1 where a round
failed, timed out, ran out of memory or is not installed, or where nothing at all was measured (every
run refused as unsupported); else 0, a line refused as unsupported included: that was decided
before launching and is said in its row.
"""

from __future__ import annotations

from dataclasses import dataclass

from mgbench.cli.interrupts import INTERRUPTED_EXIT_CODE
from mgbench.core.wording import counted
from mgbench.records.results import RunResult, Status
from mgbench.runner.plan import PlannedRun
from mgbench.runner.rounds import RoundBook

ENDED = {
    Status.FAILED: "failed",
    Status.TIMEOUT: "timed out",
    Status.OOM: "out of memory",
    Status.UNSUPPORTED: "unsupported",
    Status.NOT_INSTALLED: "not installed",
    Status.INTERRUPTED: "interrupted",
}
"""How a closing line says a round that gave no figure ended."""
FAILED_EXIT_CODE = 1
"""A compare that did not give every figure it could have, or no figure at all."""


def _first_line(result: RunResult) -> str:
    lines = (result.error or "").splitlines()
    return lines[0] if lines else ""


@dataclass(frozen=True)
class RunAccount:
    """What one planned run gave: the rounds asked of it, and each round that ran, in order."""

    run: PlannedRun
    asked: int
    rounds: tuple[RunResult, ...]

    @property
    def line(self) -> str:
        """`keras-torch ddp`: the framework and strategy the run is of."""
        return f"{self.run.config.framework} {self.run.config.strategy}"

    @property
    def measured(self) -> bool:
        return any(result.status == Status.OK for result in self.rounds)

    @property
    def failed(self) -> bool:
        return any(Status(result.status).failed for result in self.rounds)

    @property
    def short(self) -> bool:
        """Fewer rounds finished than asked: the run needs a closing line."""
        return sum(result.status == Status.OK for result in self.rounds) < self.asked

    @property
    def cause(self) -> str:
        """How the run ended where it gave no more figures: `failed`, `not installed`, ...
        (`not run` where no round was reached)."""
        ended = next((result for result in self.rounds if result.status != Status.OK), None)
        return "not run" if ended is None else ENDED[Status(ended.status)]

    def account(self) -> str:
        """Why the run is short of its rounds, without its name: `no figure: not installed (...)`,
        `figure of 2 rounds: 3 of 3 rounds run: timed out in round 3: ...`."""
        done = sum(result.status == Status.OK for result in self.rounds)
        figure = f"figure of {counted(done, 'round')}" if done else "no figure"
        ended = next(((n, r) for n, r in enumerate(self.rounds, start=1) if r.status != Status.OK), None)
        if self.run.refusal is not None and ended is not None:
            return f"{figure}: {ENDED[Status(ended[1].status)]}: {_first_line(ended[1])}"
        rounds_run = f"{len(self.rounds)} of {self.asked} rounds run" if self.asked > 1 else ""
        if ended is None:
            why = "not run: the compare stopped before its turn"
        else:
            number, result = ended
            again = ", not run again" if number < self.asked else ""
            at = f" in round {number}" if self.asked > 1 else ""
            why = f"{ENDED[Status(result.status)]}{at}{again}: {_first_line(result)}"
        return ": ".join(part for part in (figure, rounds_run, why) if part)


def run_accounts(book: RoundBook) -> list[RunAccount]:
    """Every planned run of `book` with what it gave (a refused run is asked one round)."""
    return [RunAccount(run, 1 if run.refusal else book.repeat, tuple(book.rounds_of(run))) for run in book.runs]


def closing_lines(accounts: list[RunAccount]) -> list[str]:
    """One line per run short of its rounds, runs of one line with the same account named together
    (`keras-tf mirrored x1, x2: no figure: not installed: ...`)."""
    grouped: dict[tuple[str, str], list[int]] = {}
    for account in accounts:
        if account.short:
            grouped.setdefault((account.line, account.account()), []).append(account.run.config.devices)
    return [f"{line} {', '.join(f'x{n}' for n in counts)}: {text}" for (line, text), counts in grouped.items()]


@dataclass(frozen=True)
class ExitStatus:
    """The compare's exit code and why, said as its last line (`text`)."""

    code: int
    reason: str

    @property
    def text(self) -> str:
        return f"exit {self.code}: {self.reason}"


def _lines_of(accounts: list[RunAccount]) -> dict[str, list[RunAccount]]:
    lines: dict[str, list[RunAccount]] = {}
    for account in accounts:
        lines.setdefault(account.line, []).append(account)
    return lines


def exit_status(accounts: list[RunAccount], interrupted: bool) -> ExitStatus:
    """The exit code of a compare whose runs gave `accounts` (see the module doc), with its reason."""
    lines = _lines_of(accounts)
    asked = f"of {counted(len(lines), 'line')}"
    if interrupted:
        short = sum(any(account.short for account in runs) for runs in lines.values())
        return ExitStatus(INTERRUPTED_EXIT_CODE, f"interrupted; {short} {asked} short of their rounds")
    failed = {name: runs for name, runs in lines.items() if any(account.failed for account in runs)}
    if failed:
        named = "; ".join(
            f"{name} {', '.join(dict.fromkeys(account.cause for account in runs if account.failed))}"
            for name, runs in failed.items()
        )
        return ExitStatus(FAILED_EXIT_CODE, f"{len(failed)} {asked} did not run in full ({named})")
    if not any(account.measured for account in accounts):
        return ExitStatus(FAILED_EXIT_CODE, f"nothing was measured: every run {asked} was refused as unsupported")
    refused = [name for name, runs in lines.items() if not any(account.measured for account in runs)]
    unsupported = f"; {', '.join(refused)} unsupported (decided before launching)" if refused else ""
    return ExitStatus(0, f"every run that could run was measured{unsupported}")
