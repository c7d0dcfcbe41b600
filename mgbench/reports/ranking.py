"""What a compare's lines are ranked by, and how the verdict says who came first.

A `--steps` compare measures throughput, so its lines rank by their rate (shown in the model's
unit: img/s, tokens/s). A `--epochs` compare measures what a user training a model waits for:
the time to train its epochs, or with `--target-metric` the time to the first validation that
reached the target. There a framework with the highest rate may still finish last (a slower
loader between epochs, a longer validation, more epochs to the target), so its lines rank by
that time, shortest first, with the test split's metric beside it. The compact table (`compact`) and the verdict (`verdict`)
both read the ranking of the frame (`ranking_of`), so they always agree on the first line.

The ranked figure and the steady rate carry their interval (`spread`): a line keeps
`<key>_low`/`<key>_high` beside the figure, and lines whose intervals overlap tie.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Protocol

import pandas as pd

from mgbench.core.inputs import IMAGES, RateUnit
from mgbench.core.target import TargetMetric, metric_label
from mgbench.reports.cells import number
from mgbench.reports.columns import Col
from mgbench.reports.judged import frame_metric
from mgbench.reports.spread import Spread, row_interval
from mgbench.reports.units import MFU, frame_unit, language_model


@dataclass(frozen=True)
class CountFigure:
    """A figure a compact line shows per device count: `<key>_<n>dev` among the line's values,
    `<cell>_<n>` among its cells, under `<n> GPU` and `header`. A column is dropped when the table
    does not fit by `drop_largest` (the largest count's) or `drop_smaller` (0 never goes)."""

    key: str
    cell: str
    header: str
    pattern: str
    drop_largest: int
    drop_smaller: int
    spread: bool = False
    """Whether the figure carries its interval (`<key>_low`, `<key>_high`) and is shown to the
    precision that interval supports (`Spread.text`) rather than by `pattern`."""
    per_sample: int = 1
    """What one sample counts in the unit the figure is shown in: a line holds a rate as the rows
    do, per sample, and shows it in its model's unit (`RateUnit.per_sample`: tokens for a
    language model); 1 for every other figure."""

    scale: float = 1
    """What one of the units the figure is held in counts in the unit it is shown in (bytes
    shown in GiB: 2**-30); 1 for every figure but a memory."""

    def shown(self, spread: Spread) -> Spread:
        """The figure with its interval (held per sample) in the unit it is shown in."""
        return spread.times(self.per_sample)

    def shown_value(self, value: object) -> object:
        """A value of the figure (held per sample, or in bytes) in the unit it is shown in."""
        return value * self.per_sample * self.scale if isinstance(value, int | float) else value


NOT_REACHED = "not reached"
"""What a line shows for a time to a target its run did not reach."""


def rate_figure(unit: RateUnit = IMAGES) -> CountFigure:
    """The steady rate, shown in `unit` (`units.frame_unit`: img/s, tokens/s)."""
    return CountFigure(
        Col.SAMPLES_PER_SEC, "rate", unit.label, "{:,.1f}", 0, 4, spread=True, per_sample=unit.per_sample
    )


def language_model_figures(unit: RateUnit, device: str) -> tuple[CountFigure, ...]:
    """What a language model's lines show beside the rate: the rate per device (`tokens/s per
    GPU`) and the MFU, the share of the devices' dense peak its closed-form FLOPs reach."""
    return (
        CountFigure(
            Col.SAMPLES_PER_SEC_PER_DEVICE,
            "per_device",
            f"{unit.label} per {device}",
            "{:,.0f}",
            3,
            5,
            per_sample=unit.per_sample,
        ),
        CountFigure(Col.PEAK_FRACTION, "mfu", MFU, "{:.0%}", 3, 5),
    )


def memory_figures(frame: pd.DataFrame, device: str) -> tuple[CountFigure, ...]:
    """What a language model's lines show of each device's memory, those some row has: the peak
    allocated and reserved per device, and the largest batch per device that fits, which its row
    models (`records.largest_batch`; GPUs only)."""
    figures = (
        CountFigure(Col.PEAK_MEMORY_BYTES, "peak_memory", f"peak GiB/{device}", "{:.2f}", 4, 5, scale=2**-30),
        CountFigure(Col.PEAK_MEMORY_RESERVED_BYTES, "reserved", f"reserved GiB/{device}", "{:.2f}", 4, 5, scale=2**-30),
        CountFigure(Col.LARGEST_BATCH_ESTIMATE, "largest_batch", f"max batch/{device} (est.)", "{:.0f}", 4, 5),
    )
    return tuple(figure for figure in figures if figure.key in frame and frame[figure.key].notna().any())


RATE = rate_figure()
"""The steady rate as a line holds it (its key, its cell); its header is its unit's."""
ROUNDS = "rounds"
"""The per-count value of a line saying how many rounds its figures come from."""


def line_name(line: dict[str, Any]) -> str:
    return f"{line['framework']} {line['strategy']}"


def line_spread(line: dict[str, Any] | pd.Series, key: str, count: int) -> Spread | None:
    """The line's figure `key` at `count` devices with its interval (None where it has no value)."""
    value = line.get(f"{key}_{count}dev")
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    rounds = line.get(f"{ROUNDS}_{count}dev")
    return Spread.of(
        float(value),
        _float(line.get(f"{key}_low_{count}dev")),
        _float(line.get(f"{key}_high_{count}dev")),
        int(rounds) if isinstance(rounds, int | float) and not math.isnan(rounds) else 1,
    )


def _float(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def interval_values(row: pd.Series, figures: tuple[CountFigure, ...]) -> dict[str, float]:
    """What a line keeps of an ok row beside its figures: each spread figure's interval, and the
    rounds its figures come from."""
    values: dict[str, float] = {}
    for figure in figures:
        if figure.spread:
            values[f"{figure.key}_low"], values[f"{figure.key}_high"] = row_interval(row, figure.key)
    rounds = row.get(ROUNDS)
    values[ROUNDS] = 1.0 if rounds is None or pd.isna(rounds) else float(rounds)
    return values


def interval_keys(figures: tuple[CountFigure, ...]) -> tuple[str, ...]:
    """The keys `interval_values` gives."""
    return (*(f"{f.key}_{end}" for f in figures if f.spread for end in ("low", "high")), ROUNDS)


def split_metric(value: object, name: str) -> float:
    """A metric of a row's split metrics (`test_metrics`), NaN where absent or written as null
    (undefined on its split)."""
    metric = value.get(name) if isinstance(value, dict) else None
    return math.nan if metric is None else float(metric)


class Ranking(Protocol):
    """How a compare's lines are ordered, shown and named in the verdict."""

    ranked: str
    """The per-count figure the lines are sorted by (the largest count's first)."""
    descending: bool
    missing: str
    """What the ranked cell of an ok row without the figure shows."""

    @property
    def figures(self) -> tuple[CountFigure, ...]:
        """The columns per device count, the ranked one first."""
        ...

    @property
    def keys(self) -> tuple[str, ...]:
        """Every per-count value a line holds (`<key>_<n>dev`): the figures' and any the verdict reads."""
        ...

    @property
    def nothing(self) -> str:
        """The verdict where no line has the ranked figure at the largest count."""
        ...

    def line_figures(self, row: pd.Series) -> dict[str, float]:
        """The `keys` of one ok row."""
        ...

    def vs_fastest(self, values: pd.Series) -> pd.Series:
        """Each line's share of the first line's speed (1.00x for the first)."""
        ...

    def achievement(self) -> str:
        """What the first line did fastest: `is fastest`, `trained 2 epochs fastest`."""
        ...

    @property
    def unit(self) -> str:
        """The ranked figure's unit, after its number (`img/s`, `s`)."""
        ...

    def detail(self, line: dict[str, Any], top: int) -> str:
        """What the verdict says of a line beside its figure (`test AUC 0.601`; "" for none)."""
        ...

    def lead(self, first: Spread, other: Spread) -> float:
        """How many times as fast `first` is as `other`."""
        ...

    def scaling(self, first: dict[str, Any], counts: list[int], word: str) -> str | None:
        """How the first line at the largest count compares with its smallest count (None: one count)."""
        ...


class Throughput:
    """`--steps` compares: the highest rate at the largest device count first, in the unit of the
    model (`rate`), with what a language model's lines add (`beside`)."""

    ranked = RATE.key
    descending = True
    missing = "-"
    nothing = "No run finished: nothing to compare (the notes under the table say why)."

    def __init__(self, rate: CountFigure = RATE, beside: tuple[CountFigure, ...] = ()):
        self.rate = rate
        self.beside = beside

    @property
    def figures(self) -> tuple[CountFigure, ...]:
        return (self.rate, *self.beside)

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(figure.key for figure in self.figures) + interval_keys(self.figures)

    @property
    def unit(self) -> str:
        return self.rate.header

    def line_figures(self, row: pd.Series) -> dict[str, float]:
        return {
            RATE.key: float(row[Col.SAMPLES_PER_SEC]),
            **{figure.key: _row_number(row, figure.key) for figure in self.beside},
            **interval_values(row, self.figures),
        }

    def vs_fastest(self, values: pd.Series) -> pd.Series:
        best = values.max()
        return values / best if best and best > 0 else values * math.nan

    def achievement(self) -> str:
        return "is fastest"

    def detail(self, line: dict[str, Any], top: int) -> str:
        return ""

    def lead(self, first: Spread, other: Spread) -> float:
        return first.value / other.value

    def scaling(self, first: dict[str, Any], counts: list[int], word: str) -> str | None:
        """The speed-up and efficiency the line's row at the largest count holds (`records.scaling`,
        the results file's), where the line has a rate at the smallest count they are taken against."""
        top = counts[-1]
        if len(counts) < 2 or not number(first[f"{self.ranked}_{counts[0]}dev"]):
            return None
        speedup, efficiency = _figure(first, Col.SPEEDUP, top), first[f"scaling_efficiency_pct_{top}dev"]
        return f"{speedup:.2f}x its {counts[0]}-{word} throughput ({efficiency:.0f}% scaling efficiency)"


class TimeToTrain:
    """`--epochs` compares: the shortest time to train every epoch (validation included) first."""

    ranked = "time_to_train_seconds"
    header = "train s"
    descending = False
    missing = "-"
    unit = "s"

    def __init__(self, epochs: int, metric: str, rate: CountFigure = RATE, beside: tuple[CountFigure, ...] = ()):
        self.epochs = epochs
        self.metric = metric
        """The test split's metric shown: `auc`, `top1` on class folders, a language model's `loss`."""
        self.rate = rate
        self.beside = beside

    @property
    def figures(self) -> tuple[CountFigure, ...]:
        steady = dataclasses.replace(self.rate, header=f"steady {self.rate.header}", drop_largest=2, drop_smaller=5)
        return (
            CountFigure(self.ranked, "time", self.header, "{:,.1f}", 0, 4, spread=True),
            CountFigure(f"test_{self.metric}", "test", f"test {metric_label(self.metric)}", "{:.3f}", 0, 4),
            steady,
            *self.beside,
        )

    @property
    def keys(self) -> tuple[str, ...]:
        return (*(figure.key for figure in self.figures), *interval_keys(self.figures), "compile_seconds")

    @property
    def nothing(self) -> str:
        return f"No run {self.achievement()}: nothing to compare (the notes under the table say why)."

    def line_figures(self, row: pd.Series) -> dict[str, float]:
        return {
            self.ranked: _row_number(row, self.ranked),
            f"test_{self.metric}": split_metric(row.get(Col.TEST_METRICS), self.metric),
            RATE.key: float(row[Col.SAMPLES_PER_SEC]),
            **{figure.key: _row_number(row, figure.key) for figure in self.beside},
            **interval_values(row, self.figures),
            "compile_seconds": _row_number(row, "compile_seconds"),
        }

    def vs_fastest(self, values: pd.Series) -> pd.Series:
        best = values.min()
        return best / values if best and best > 0 else values * math.nan

    def achievement(self) -> str:
        """What the first line did fastest."""
        return f"trained {self.epochs} epoch{'s' if self.epochs != 1 else ''} fastest"

    def reached(self, line: dict[str, Any], top: int) -> str:
        """What the verdict says of a line before its test metric."""
        return ""

    def detail(self, line: dict[str, Any], top: int) -> str:
        test = line.get(f"test_{self.metric}_{top}dev")
        shown = "-" if test is None or (isinstance(test, float) and math.isnan(test)) else f"{float(test):.3f}"
        compile_seconds = line.get(f"compile_seconds_{top}dev")
        compiled = (
            f"compile {compile_seconds:,.1f} s of it, "
            if isinstance(compile_seconds, float) and not math.isnan(compile_seconds)
            else ""
        )
        return f"{self.reached(line, top)}{compiled}test {metric_label(self.metric)} {shown}"

    def lead(self, first: Spread, other: Spread) -> float:
        return other.value / first.value

    def scaling(self, first: dict[str, Any], counts: list[int], word: str) -> str | None:
        top, base = counts[-1], first[f"{self.ranked}_{counts[0]}dev"]
        if len(counts) < 2 or not base:
            return None
        return f"{float(base) / _figure(first, self.ranked, top):.2f}x as fast as on {counts[0]} {word}"


class TimeToTarget(TimeToTrain):
    """`--epochs` with `--target-metric`: the shortest time to the validation that reached it
    first; lines that never reached it after every line that did."""

    ranked = "time_to_target_seconds"
    header = "to target s"
    missing = NOT_REACHED

    def __init__(
        self,
        target: TargetMetric,
        epochs: int,
        metric: str,
        rate: CountFigure = RATE,
        beside: tuple[CountFigure, ...] = (),
    ):
        super().__init__(epochs, metric, rate, beside)
        self.target = target

    @property
    def keys(self) -> tuple[str, ...]:
        return (*super().keys, "target_epoch")

    def line_figures(self, row: pd.Series) -> dict[str, float]:
        return {**super().line_figures(row), "target_epoch": _row_number(row, "target_epoch")}

    def achievement(self) -> str:
        return f"reached {self.target.label} fastest"

    def reached(self, line: dict[str, Any], top: int) -> str:
        epoch = line.get(f"target_epoch_{top}dev")
        return (
            ""
            if epoch is None or (isinstance(epoch, float) and math.isnan(epoch))
            else f"epoch {int(epoch)} of {self.epochs}, "
        )


def _figure(line: dict[str, Any], key: str, count: int) -> float:
    """A line's figure at `count` devices (a line ranked first or second has it)."""
    return float(line[f"{key}_{count}dev"])


def _row_number(row: pd.Series, key: str) -> float:
    value = row.get(key)
    return math.nan if value is None or pd.isna(value) else float(value)


def ranking_of(frame: pd.DataFrame, device: str = "GPU") -> Ranking:
    """The ranking a results frame's compare asks for: by time where its rows trained in epochs
    (to the target where one was set), else by throughput; the rate in its model's unit
    (`units.frame_unit`), and a language model's rate per `device`, MFU and memory beside it."""
    unit = frame_unit(frame)
    rate = rate_figure(unit)
    language = language_model(frame) is not None
    beside = (*language_model_figures(unit, device), *memory_figures(frame, device)) if language else ()
    if Col.EPOCHS not in frame or frame[Col.EPOCHS].isna().all():
        return Throughput(rate, beside)
    epochs = int(frame[Col.EPOCHS].max())
    metric = frame_metric(frame).name
    if Col.TARGET_METRIC in frame and len(targets := frame[Col.TARGET_METRIC].dropna()):
        return TimeToTarget(TargetMetric.parse(str(targets.iloc[0])), epochs, metric, rate, beside)
    return TimeToTrain(epochs, metric, rate, beside)
