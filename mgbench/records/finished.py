"""The results file's one writer: a run folder's rows finished, then written whole.

A row of `results.jsonl` holds figures no single round measured: the run's row is its median
round's, with every ok round's figure beside it and the steady rate's interval over every round
(`combine_rounds`), the largest batch per GPU its rounds' peaks model (`records.largest_batch`),
and its speed-up, efficiency and rate per device against the other rows (`records.scaling`).
They are computed here, from every round of every run each time the file is written, so
`compare`, `run`, `--resume` and a compare driven from Python (`runner.compare_service`) write
the same rows for the same rounds, and a resume that adds a round leaves no speed-up taken against a row that changed. The file is replaced atomically
(`results.write_json_atomically`): a crash mid-write leaves the previous file whole.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path

from mgbench.records.figures import Rounds
from mgbench.records.largest_batch import with_largest_batches
from mgbench.records.results import RunResult, Status, write_json_atomically
from mgbench.records.scaling import with_scaling


def round_order(result: RunResult) -> float:
    """How a round ranks among its run's rounds, best first: by time to the target or to train for
    `--epochs` (a target not reached last), else by the steady rate."""
    config = result.config
    if config.job.epochs:
        by_epoch = result.by_epoch
        seconds = by_epoch.time_to_target_seconds if config.job.target_metric else by_epoch.time_to_train_seconds
        return math.inf if seconds is None else seconds
    return -(result.timing.samples_per_sec or 0.0)


def _bound(values: list[float | None], pick: Callable[[list[float]], float]) -> float | None:
    """`pick` (min, max) of `values`; None where any has no value (a row written before it had one)."""
    present = [value for value in values if value is not None]
    return pick(present) if len(present) == len(values) and present else None


def combine_rounds(rounds: list[RunResult]) -> RunResult:
    """The run's row from its rounds (in the order they ran): the median ok round's row (of an even
    count, the slower of the middle two), each ok round's figures beside it, the steady rate's
    interval over every ok round, and a warning per round that did not finish. Without an ok
    round, the last round's row."""
    ok = [result for result in rounds if result.status == Status.OK]
    if not ok:
        return rounds[-1]
    median = sorted(ok, key=round_order)[len(ok) // 2]
    unfinished = [
        f"round {number} of {len(rounds)}: {result.status}: {(result.error or '').splitlines()[0] if result.error else ''}"
        for number, result in enumerate(rounds, start=1)
        if result.status != Status.OK
    ]
    epochs, target = median.config.job.epochs, median.config.job.target_metric
    repeats = Rounds(
        rounds=len(ok),
        round_samples_per_sec=[result.timing.samples_per_sec for result in ok],
        round_time_to_train_seconds=[result.by_epoch.time_to_train_seconds for result in ok] if epochs else [],
        round_time_to_target_seconds=[result.by_epoch.time_to_target_seconds for result in ok] if target else [],
    )
    timing = replace(
        median.timing,
        samples_per_sec_low=_bound([result.timing.samples_per_sec_low for result in ok], min),
        samples_per_sec_high=_bound([result.timing.samples_per_sec_high for result in ok], max),
    )
    return replace(median, repeats=repeats, timing=timing, warnings=[*median.warnings, *unfinished])


def finished_rows(runs: Iterable[list[RunResult]]) -> list[RunResult]:
    """One row per run, in the order given, from each run's rounds (in the order they ran): its
    combined row (`combine_rounds`) with its largest batch per GPU modelled from the rounds'
    peaks (`largest_batch.with_largest_batches`) and its scaling figures against the other rows
    (`scaling.with_scaling`)."""
    ran = [rounds for rounds in runs if rounds]
    return with_scaling(with_largest_batches([combine_rounds(rounds) for rounds in ran], ran))


def write_results(path: Path, runs: Iterable[list[RunResult]]) -> list[RunResult]:
    """Replace the results file at `path` by exactly the `finished_rows` of `runs` (each run's
    rounds), atomically, and return them: the one way a results file is written, so every row
    in it is finished alike (a resume drops the rows it reruns)."""
    rows = finished_rows(runs)
    write_json_atomically(path, "".join(row.to_json() + "\n" for row in rows))
    return rows
