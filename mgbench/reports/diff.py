"""Two run folders set against each other (`mgbench diff OLD NEW`): did NEW get slower?

Rows match by run id (framework, strategy, device count and kind). A matched row's change is
its rate (and with `--epochs` its time to train) in NEW against OLD, each with its spread
(`row_spread`): the steady rate's interval (the slowest and fastest third of any round's steady
window, never under the noise floor either side: `spread.Spread`, by which the compare's table
calls two lines a tie), or where a folder's row has none (written before intervals were
measured) the p10-p90 of both rows' single steps. NEW is slower beyond the spread where its
whole spread lies below OLD's: where the two would not tie in one compare; with a threshold
(`--fail-above PCT`) where it is slower by more than PCT percent, whatever the spread says, as
pytest-benchmark's `--benchmark-compare-fail` does. A run ok in OLD that did not finish in NEW,
or has no row there, is a regression too. Runs that trained other work (`WORK_FIELDS`: another
model, image size or sequence length, precision or batch) have rates that say nothing of each
other: such folders are refused, naming what differs in the model's terms (`image size` or
`seq len`, `images/sec` or `tokens/s`). What else sets the folders apart is named, since it
may explain the change: rows found in NEW only, the rest of the job (steps, dataset, ...), the
machine (GPUs, driver, Python) and the versions (mgbench, each framework's packages), each set
against the other folder's only where both recorded it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from mgbench.core.config import COLUMNS
from mgbench.core.errors import UsageError
from mgbench.records.results import RunResult
from mgbench.reports.cells import number
from mgbench.reports.columns import Col
from mgbench.reports.folder_data import RunFolderData
from mgbench.reports.judged import size_name
from mgbench.reports.spread import Spread
from mgbench.reports.units import frame_unit

MACHINE_FIELDS = ("hostname", "platform", "python", "cpu_count", "memory_total_gib", "driver", "cuda_driver")
"""What a row's `environment` says of the machine, compared field by field (its GPUs too)."""
WORK_COLUMNS = ("model", "image_size", "precision", "batch_per_device")
WORK_FIELDS = tuple(column.replace("_", " ") for column in WORK_COLUMNS)
"""What a sample of a run's rate costs: runs that differ in one are not compared (the input's size,
`image_size`, is named as the model's input sizes it: `judged.size_name`)."""
SIZE_FIELD = WORK_FIELDS[WORK_COLUMNS.index("image_size")]
JOB_FIELDS = tuple(
    name for name in COLUMNS if name not in ("framework", "strategy", "devices", "device_kind", *WORK_COLUMNS)
)
"""The config fields besides the run id's and the work's: a matched row that differs in one
trained another job, named beside the changes it may explain."""
INTERVAL = "interval"
"""A spread that is the steady rate's interval (`samples_per_sec_low`-`_high`, widened to the noise floor)."""
STEPS = "p10-p90"
"""A spread that is the p10-p90 of single steps' rates: rows written before intervals were measured."""


@dataclass(frozen=True)
class Measured:
    """A figure of one row with its spread (`low`-`high`, what `of` says: `INTERVAL` or `STEPS`),
    None where the row has none."""

    value: float | None
    low: float | None = None
    high: float | None = None
    of: str = INTERVAL

    def times(self, factor: int) -> Measured:
        """The figure and its spread counted in a unit `factor` to a sample (a rate held in samples
        per second, shown in tokens per second)."""
        value, low, high = (None if figure is None else figure * factor for figure in (self.value, self.low, self.high))
        return Measured(value, low, high, self.of)

    def text(self, pattern: str, spread: bool = True) -> str:
        """The figure in `pattern`, `-` where there is none; with `spread`, its spread after it."""
        if self.value is None:
            return "-"
        shown = spread and self.low is not None and self.high is not None
        return pattern.format(self.value) + (f" ({self.low:,.0f}-{self.high:,.0f})" if shown else "")


def has_interval(row: pd.Series) -> bool:
    """Whether a row holds its steady rate's interval (rows written before it was measured do not)."""
    return (
        number(row.get(Col.SAMPLES_PER_SEC_LOW)) is not None and number(row.get(Col.SAMPLES_PER_SEC_HIGH)) is not None
    )


def row_spread(row: pd.Series, interval: bool) -> Measured:
    """A row's rate (per sample) and its spread: with `interval`, its steady rate's interval as the
    compare's table reads it (`Spread.of`), else the p10-p90 of its steady steps' rates."""
    value = number(row.get(Col.SAMPLES_PER_SEC))
    if value is None:
        return Measured(None, of=INTERVAL if interval else STEPS)
    if interval:
        spread = Spread.of(value, number(row.get(Col.SAMPLES_PER_SEC_LOW)), number(row.get(Col.SAMPLES_PER_SEC_HIGH)))
        return Measured(value, spread.low, spread.high, INTERVAL)
    return Measured(value, number(row.get(Col.SAMPLES_PER_SEC_P10)), number(row.get(Col.SAMPLES_PER_SEC_P90)), STEPS)


def _change(old: float | None, new: float | None) -> float | None:
    """NEW against OLD as a fraction (-0.5: half), None where either has no value."""
    return None if old is None or new is None or old == 0 else new / old - 1


@dataclass(frozen=True)
class MemoryFigures:
    """A row's memory per GPU: its peak allocated and reserved, in bytes, and the largest batch
    per GPU it models (`records.largest_batch`); None where the row has none."""

    peak: float | None = None
    reserved: float | None = None
    largest_batch: float | None = None

    @classmethod
    def of(cls, row: pd.Series) -> MemoryFigures:
        return cls(
            number(row.get(Col.PEAK_MEMORY_BYTES)),
            number(row.get(Col.PEAK_MEMORY_RESERVED_BYTES)),
            number(row.get(Col.LARGEST_BATCH_ESTIMATE)),
        )

    @property
    def known(self) -> bool:
        return any(figure is not None for figure in (self.peak, self.reserved, self.largest_batch))


@dataclass(frozen=True)
class RowChange:
    """One run id found in both folders (with its memory figures beside its rate)."""

    run_id: str
    old_status: str
    new_status: str
    old_rate: Measured
    new_rate: Measured
    old_train: float | None
    new_train: float | None
    old_memory: MemoryFigures = MemoryFigures()
    new_memory: MemoryFigures = MemoryFigures()

    @property
    def rate_change(self) -> float | None:
        return _change(self.old_rate.value, self.new_rate.value)

    @property
    def train_change(self) -> float | None:
        return _change(self.old_train, self.new_train)

    def beyond_spread(self) -> int:
        """-1 where NEW's spread lies wholly below OLD's, 1 wholly above, 0 where they overlap
        (or a row lacks one)."""
        old, new = self.old_rate, self.new_rate
        if None in (old.low, old.high, new.low, new.high):
            return 0
        return -1 if new.high < old.low else 1 if new.low > old.high else 0  # type: ignore[operator]

    def regression(self, fail_above_pct: float | None) -> str | None:
        """Why NEW is worse than OLD for this row, None where it is not."""
        if self.old_status == "ok" and self.new_status != "ok":
            return f"{self.new_status} in NEW"
        if self.old_status != "ok" or self.rate_change is None:
            return None
        if fail_above_pct is None:
            return "slower beyond the spread" if self.beyond_spread() < 0 else None
        limit = fail_above_pct / 100
        if -self.rate_change > limit:
            return f"{-self.rate_change:.1%} slower (over {fail_above_pct:g}%)"
        if self.train_change is not None and self.train_change > limit:
            return f"{self.train_change:.1%} longer to train (over {fail_above_pct:g}%)"
        return None

    def reading(self) -> str:
        """How NEW's rate stands against OLD's spread, in a few words."""
        if self.old_status != "ok" or self.new_status != "ok":
            return f"{self.old_status} -> {self.new_status}"
        return {-1: "slower beyond the spread", 0: "within the spread", 1: "faster beyond the spread"}[
            self.beyond_spread()
        ]


NO_ROW = "no row"
"""NEW's status for a run ok in OLD that NEW has no row of: worse, as nothing in NEW shows it is not."""


@dataclass
class FolderDiff:
    changes: list[RowChange]
    only_old: list[str]
    only_new: list[str]
    job: list[str] = field(default_factory=list)
    machine: list[str] = field(default_factory=list)
    versions: list[str] = field(default_factory=list)

    @property
    def matched(self) -> list[RowChange]:
        """The changes of the runs found in both folders."""
        return [change for change in self.changes if change.run_id not in self.only_old]

    def regressions(self, fail_above_pct: float | None) -> list[tuple[RowChange, str]]:
        return [(change, why) for change in self.changes if (why := change.regression(fail_above_pct))]


def _train_seconds(row: pd.Series) -> float | None:
    return number(row.get(Col.TIME_TO_TRAIN_SECONDS))


def _machine(frame: pd.DataFrame) -> dict[str, Any]:
    """The machine the folder's first row with an environment ran on, its GPUs as `N x name`;
    empty where no row recorded one (every run failed before measuring)."""
    for environment in frame[Col.ENVIRONMENT]:
        if isinstance(environment, dict) and environment:
            gpus = [str(gpu.get("name")) for gpu in environment.get("gpus") or [] if isinstance(gpu, dict)]
            named = {name: environment.get(name) for name in MACHINE_FIELDS}
            return {**named, "gpus": ", ".join(f"{gpus.count(n)} x {n}" for n in dict.fromkeys(gpus)) or "none"}
    return {}


def _versions(frame: pd.DataFrame) -> dict[str, str]:
    """mgbench's version and each framework's packages', as `framework package` -> version, from
    the rows that recorded them."""
    versions = {}
    for _, row in frame.iterrows():
        environment, packages = row.get(Col.ENVIRONMENT), row.get(Col.FRAMEWORK_VERSIONS)
        if isinstance(environment, dict) and environment.get("mgbench"):
            versions["mgbench"] = str(environment["mgbench"])
        for package, version in packages.items() if isinstance(packages, dict) else []:
            versions[f"{row[Col.FRAMEWORK]} {package}"] = str(version)
    return versions


def _differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """`name before -> after` for each name both recorded that differs: a folder whose rows
    recorded none (failed before measuring) differs in nothing it can show."""
    return [f"{name} {old[name]} -> {new[name]}" for name in old if name in new and old[name] != new[name]]


def _job(old: pd.DataFrame, new: pd.DataFrame, matched: list[str]) -> list[str]:
    """The job fields (`JOB_FIELDS`) the matched rows differ in between the folders."""
    differences = []
    for name in JOB_FIELDS:
        if name not in old or name not in new:
            continue
        before = {_value(v) for v in old.loc[matched, name]}
        after = {_value(v) for v in new.loc[matched, name]}
        if before != after:
            differences.append(f"{name} {'/'.join(sorted(before))} -> {'/'.join(sorted(after))}")
    return differences


def _value(value: object) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "none"
    return str(value)


def work(result: RunResult) -> dict[str, object]:
    """What a sample of a run costs (`WORK_FIELDS`): its model, its input's size (image side or
    sequence length, the model's own where the job left it), its precision and the batch per device it asked for (running out of
    memory halves the one that ran, which is NEW's own doing, not another job)."""
    job = result.config.job
    side: int | None
    try:
        side = job.input_size
    except UsageError:  # a model this installation has no spec of (a plugin's): its side as recorded
        side = job.image_size
    asked = result.retries.requested_batch_per_device or job.batch_per_device
    return dict(zip(WORK_FIELDS, (job.model, side, job.precision, asked), strict=True))


def other_work(old: dict[str, RunResult], new: dict[str, RunResult], matched: list[str]) -> list[str]:
    """`field before -> after (runs)` for each work field (`work`) the matched runs differ in."""
    differing: dict[str, list[str]] = {}
    for run_id in matched:
        before, after = work(old[run_id]), work(new[run_id])
        for name in WORK_FIELDS:
            if before[name] != after[name]:
                named = size_name(new[run_id].config.job.model) if name == SIZE_FIELD else name
                differing.setdefault(f"{named} {_value(before[name])} -> {_value(after[name])}", []).append(run_id)
    return [f"{change} ({', '.join(runs)})" for change, runs in differing.items()]


def diff_folders(old: RunFolderData, new: RunFolderData) -> FolderDiff:
    """Every run id of both folders: the changes of those in both, those in one only, and what
    else sets the folders apart. Folders whose matched runs trained other work (`other_work`)
    are one UsageError naming it: their rates (in the model's unit) say nothing of each other."""
    before, after = old.frame.set_index("run_id", drop=False), new.frame.set_index("run_id", drop=False)
    matched = [run_id for run_id in before.index if run_id in after.index]
    old_runs, new_runs = ({r.run_id: r for r in data.results} for data in (old, new))
    if differing := other_work(old_runs, new_runs, matched):
        raise UsageError(
            f"{old.root} and {new.root} trained other work, whose {frame_unit(new.frame).heading} do not compare: "
            f"{'; '.join(differing)}"
        )
    changes = []
    for run_id in matched:
        old_row, new_row = before.loc[run_id], after.loc[run_id]
        measured = [row for row in (old_row, new_row) if number(row.get(Col.SAMPLES_PER_SEC)) is not None]
        interval = all(has_interval(row) for row in measured)  # one kind of spread on both sides
        changes.append(
            RowChange(
                run_id,
                str(old_row[Col.STATUS]),
                str(new_row[Col.STATUS]),
                row_spread(old_row, interval),
                row_spread(new_row, interval),
                _train_seconds(old_row),
                _train_seconds(new_row),
                MemoryFigures.of(old_row),
                MemoryFigures.of(new_row),
            )
        )
    only_old = [run_id for run_id in before.index if run_id not in after.index]
    for run_id in only_old:
        old_row = before.loc[run_id]
        if old_row[Col.STATUS] == "ok":  # measured in OLD, nowhere in NEW: worse (`NO_ROW`)
            rate = row_spread(old_row, has_interval(old_row))
            changes.append(
                RowChange(
                    run_id,
                    "ok",
                    NO_ROW,
                    rate,
                    Measured(None, of=rate.of),
                    _train_seconds(old_row),
                    None,
                    MemoryFigures.of(old_row),
                )
            )
    return FolderDiff(
        changes,
        only_old,
        [run_id for run_id in after.index if run_id not in before.index],
        _job(before, after, matched),
        _differences(_machine(old.frame), _machine(new.frame)),
        _differences(_versions(old.frame), _versions(new.frame)),
    )
