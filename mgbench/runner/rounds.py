"""Rounds: every planned run measured `--repeat` times, interleaved, and its row the median round's.

One run decides nothing: a run whose warm-up was misread, or whose clocks had not risen, lands
far from the next run of the same command, and drift over a compare (clocks, a busy neighbour, caches) hits whichever run is on at
the time. So a compare runs every planned run once, then every one again (round 2), and so on:
drift then falls on every row alike instead of on the row that happened to run during it.

Each round's row goes to `rounds.jsonl` (with `round`, its number) as it ends; `results.jsonl`
holds one row per run, rewritten after every round by its one writer (`records.finished`): the
median round's row (`finished.combine_rounds`), with every ok round's figure beside it
(`round_samples_per_sec`, with `--epochs` `round_time_to_train_seconds` and
`round_time_to_target_seconds`), the steady rate's interval over every round
(`samples_per_sec_low`, `samples_per_sec_high`) and its scaling figures. A run whose round did not finish
is not run again in later rounds (a crash or a timeout would only repeat itself); its row keeps the
rounds that finished and says which did not. `--resume` keeps the rounds that finished and runs
the rest.

Logs, utilisation traces and profiles are named by run, so they hold the last round's.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field

from mgbench.core.config import RunConfig
from mgbench.core.kinds import DeviceKind
from mgbench.records.finished import finished_rows, write_results
from mgbench.records.results import RunResult, append_line, read_result_lines, read_results
from mgbench.records.runfolder import RunFolder
from mgbench.runner.plan import PlannedRun

GPU_ROUNDS = 3
"""Rounds on GPUs unless `--repeat` says otherwise: one run can land far from the next (a warm-up
misread, a clock that had not risen), and three give a median that one such run cannot move, and
a spread, while a GPU run of the default job takes a minute or two."""
CPU_ROUNDS = 1
"""Rounds on CPU devices unless `--repeat` says otherwise: they stand in for GPUs to try the
pipeline with a job shrunk to end in minutes on a laptop's shared cores; one round's interval (its
steady window timed in thirds) still says where rows tie, and `--repeat 3` gives the rest."""
KEPT_STATUSES = ("ok", "unsupported")
"""Rounds a resumed compare keeps; every other status (failed, timeout, oom, interrupted,
not-installed) is run again."""


def default_rounds(kind: DeviceKind) -> int:
    """How many rounds a compare on `kind` devices runs when `--repeat` is not given."""
    return GPU_ROUNDS if kind.on_gpu else CPU_ROUNDS


@dataclass
class RoundBook:
    """The rounds of a compare: what each run has done, and which run each round still owes."""

    runs: list[PlannedRun]
    repeat: int
    done: dict[str, list[RunResult]] = field(default_factory=dict)
    """Each run's rounds so far (by run_id), in the order they ran."""

    def rounds_of(self, run: PlannedRun) -> list[RunResult]:
        return self.done.setdefault(run.config.run_id, [])

    def due(self, number: int) -> list[PlannedRun]:
        """The runs that owe round `number`: fewer rounds than that so far, every one of them ok.
        A run refused at planning gets its one row in round 1 and no other."""
        return [
            run
            for run in self.runs
            if len(rounds := self.rounds_of(run)) < number and all(result.status == "ok" for result in rounds)
        ]

    def rounds_owed(self) -> Iterator[tuple[int, list[PlannedRun]]]:
        """Each round still owed, by number, with the runs that owe it (`due`, asked as the round
        starts). It ends once no run owes a round: a run owes none after a round that did not
        finish, so a compare whose runs all ended in round 1 (refused, timed out, failed) ends
        there, whatever `repeat` says."""
        for number in range(1, self.repeat + 1):
            if not self.owed():
                return
            if due := self.due(number):
                yield number, due

    def fitted(self, run: PlannedRun) -> int:
        """The halvings of the planned batch `run`'s last ok round took to fit in memory
        (`oom_retries`): its next round starts at that batch instead of running out of memory again."""
        ok = [result for result in self.rounds_of(run) if result.status == "ok"]
        return ok[-1].retries.oom_retries if ok else 0

    def launches_left(self) -> int:
        """Rounds still owed if every one finishes (a refused run counts once); a run with more
        rounds done than `repeat` (`--resume --repeat 1` after 3) owes none."""
        owed = 0
        for run in self.runs:
            rounds = self.rounds_of(run)
            if all(result.status == "ok" for result in rounds):
                owed += 1 if run.refusal else max(self.repeat - len(rounds), 0)
        return owed

    def record(self, folder: RunFolder, result: RunResult) -> None:
        """A round ended: its row to `rounds.jsonl`, and the run's combined row into `results.jsonl`
        (every run that has a round, in plan order)."""
        rounds = self.done.setdefault(result.run_id, [])
        rounds.append(result)
        append_line(folder.rounds, round_line(len(rounds), result))
        write_results(folder.results, self.by_run())

    def by_run(self) -> list[list[RunResult]]:
        """Each run's rounds, in plan order."""
        return [self.rounds_of(run) for run in self.runs]

    def rows(self) -> list[RunResult]:
        """One row per run with a round, in plan order, as the results file holds it (`finished_rows`)."""
        return finished_rows(self.by_run())

    @classmethod
    def kept(cls, runs: list[PlannedRun], repeat: int, recorded: list[tuple[int, RunResult]]) -> RoundBook:
        """The rounds of a compare to resume: of its `recorded` rounds (`recorded_rounds`), those
        that finished ok (or were refused at planning), in round order, per planned run."""
        book = cls(runs, repeat)
        planned = {run.config.run_id: run for run in runs}
        for _, result in sorted(recorded, key=lambda item: item[0]):
            if result.run_id in planned and result.status in KEPT_STATUSES:
                book.rounds_of(planned[result.run_id]).append(result)
        return book

    def owed(self) -> list[PlannedRun]:
        """The runs that owe a round (in round 1's terms: any round up to `repeat`)."""
        return self.due(self.repeat)

    def rewrite(self, folder: RunFolder) -> None:
        """`rounds.jsonl` and `results.jsonl` as exactly the rounds kept, so that the rounds still
        owed run into a consistent folder."""
        lines = [
            round_line(number, result) for run in self.runs for number, result in enumerate(self.rounds_of(run), 1)
        ]
        folder.write(folder.rounds, "".join(line + "\n" for line in lines))
        write_results(folder.results, self.by_run())

    def statuses(self) -> set[str]:
        """The status of every round recorded (a compare exits 1 where one failed)."""
        return {result.status for rounds in self.done.values() for result in rounds}


def planned_as(result: RunResult) -> RunConfig:
    """The config the round was planned with: its own, with the batch asked for where running
    out of memory halved the one that ran (`requested_batch_per_device`)."""
    requested = result.retries.requested_batch_per_device
    return result.config if requested is None else result.config.with_changes(batch_per_device=requested)


def rounds_off_plan(runs: list[PlannedRun], recorded: list[tuple[int, RunResult]]) -> list[str]:
    """What a resume would lose or mix up among the `recorded` rounds, one line per run: a round of
    a run that `runs` (the recorded plan) does not list, which rewriting the folder would drop,
    and one that ran another job than the plan's run (`steps 3, planned 7`), which would stand as
    done beside rounds of the planned job. Empty where every round fits its planned run."""
    planned = {run.config.run_id: run.config for run in runs}
    found: dict[str, str] = {}
    for _, result in recorded:
        config = planned.get(result.run_id)
        if config is None:
            found.setdefault(result.run_id, f"{result.run_id} has rows but is not planned")
        elif (ran := planned_as(result)) != config:
            ran_fields, plan_fields = ran.to_dict(), config.to_dict()
            differ = [name for name in plan_fields if ran_fields[name] != plan_fields[name]]
            what = ", ".join(f"{name} {ran_fields[name]}, planned {plan_fields[name]}" for name in differ)
            found.setdefault(result.run_id, f"{result.run_id} ran another job ({what})")
    return list(found.values())


def round_line(number: int, result: RunResult) -> str:
    """A line of `rounds.jsonl`: the round's row with its number."""
    return json.dumps({"round": number, **result.to_record()}, allow_nan=False)


def recorded_rounds(folder: RunFolder) -> list[tuple[int, RunResult]]:
    """The rounds a run folder holds, each with its number: `rounds.jsonl`'s, and each row of
    `results.jsonl` whose run has none there (a folder written before rounds) as its round 1. Both
    files are read as every reader reads them (`read_result_lines`), so a name mgbench could not
    have written in either refuses the folder."""
    rounds = []
    if folder.rounds.exists():
        records, results, _ = read_result_lines(folder.rounds)
        rounds = [(_round_number(record), result) for record, result in zip(records, results, strict=True)]
    have = {result.run_id for _, result in rounds}
    return rounds + [(1, result) for result in read_results(folder.results) if result.run_id not in have]


def _round_number(record: dict[str, object]) -> int:
    number = record.get("round")
    return number if isinstance(number, int) and not isinstance(number, bool) and number > 0 else 1
