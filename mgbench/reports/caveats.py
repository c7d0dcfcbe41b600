"""What makes a trained row's answer mean little: a job too short to time, or a model that has not learned.

A `--epochs` compare answers "how long to train, and to what": a time to train that is mostly
compile, warm-up and validation, or a steady rate over a handful of steps, says little of the
framework; a test AUC at chance, or a test metric far worse than the same job's on fewer devices
(below it for AUC, above it for a language model's loss: `Metric.higher_is_better`), says the
model did not learn, so its time is a time to nothing. Each such row gets a `Caveat`: its warning in the table,
and the verdict says which answer means little and what to change.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import pandas as pd

from mgbench.core.objective import AUC, Metric
from mgbench.reports.cells import number
from mgbench.reports.columns import Col
from mgbench.reports.judged import frame_metric, sample_noun
from mgbench.reports.ranking import split_metric

MIN_STEADY_STEPS = 30
"""An epochs row with fewer steady steps is too short for its rate to hold: its interval is timed
in thirds (`timing.SPREAD_PARTS`), each then under 10 steps, where one slow step moves a third by
a tenth."""
MOST_OVERHEAD = 0.5
"""An epochs row whose compile, warm-up and validation take more than this share of its time to
train times those, not its training."""
CHANCE_AUC = 0.5
FAR_BELOW = 0.05
"""A test metric this far worse than the same framework and strategy's on its fewest devices (in
the metric's direction): the larger run did not learn what the smaller one did (the learning
rate's scaling, too few steps per device)."""

Concern = Literal["timing", "metric"]


@dataclass(frozen=True)
class Caveat:
    """Why one row's answer means little: `concern` says which answer (its `timing`, or its test
    `metric`), `text` why (the row's warning), `remedy` what to change."""

    concern: Concern
    text: str
    remedy: str

    def to_dict(self) -> dict[str, str]:
        return {"concern": self.concern, "text": self.text, "remedy": self.remedy}


OVERHEADS = {"compile": "compile_seconds", "warm-up": "warmup_seconds", "validation": "eval_seconds"}
"""The parts of a time to train that are not steady training, by the row's field that times each."""


def more_work(samples: str) -> str:
    """The remedy of a timing caveat, naming what the rows train (`images`, `tokens`)."""
    return f"train more {samples} or more epochs"


LEARN = "train more epochs, or stop at a level the model reaches with --target-metric"


def timing_caveats(row: pd.Series, samples: str) -> list[Caveat]:
    """An ok epochs row's: too few steady steps, or a time to train mostly compile, warm-up and
    validation; the remedy names the `samples` it trains."""
    caveats = []
    steady = number(row.get(Col.STEADY_STEPS))
    if steady is not None and steady < MIN_STEADY_STEPS:
        caveats.append(
            Caveat(
                "timing",
                f"{steady:.0f} steady steps: too few for its rate to hold ({MIN_STEADY_STEPS} or more)",
                more_work(samples),
            )
        )
    total = number(row.get(Col.TIME_TO_TRAIN_SECONDS))
    parts = {name: number(row.get(key)) or 0.0 for name, key in OVERHEADS.items()}
    if total and sum(parts.values()) > MOST_OVERHEAD * total:
        spent = ", ".join(f"{name} {seconds:,.1f} s" for name, seconds in parts.items() if seconds)
        caveats.append(
            Caveat(
                "timing",
                f"{sum(parts.values()) / total:.0%} of its {total:,.1f} s time to train is {spent}, not steady training",
                more_work(samples),
            )
        )
    return caveats


def metric_caveats(row: pd.Series, base: pd.Series | None, metric: Metric) -> list[Caveat]:
    """An ok epochs row's: a test AUC at or below chance, or a test metric far worse than `base`'s
    in its direction (the same framework and strategy on its fewest devices; None where this row
    is that)."""
    value = split_metric(row.get(Col.TEST_METRICS), metric.name)
    if math.isnan(value):
        return []
    caveats = []
    if metric == AUC and value <= CHANCE_AUC:
        caveats.append(
            Caveat("metric", f"test AUC {value:.3f}: no better than chance, the model has not learned", LEARN)
        )
    reference = math.nan if base is None else split_metric(base.get(Col.TEST_METRICS), metric.name)
    worse = value - reference if not metric.higher_is_better else reference - value
    if worse > FAR_BELOW:
        caveats.append(
            Caveat(
                "metric",
                f"test {metric.name} {value:.3f}, far {'below' if metric.higher_is_better else 'above'} the {reference:.3f} of the same job on "
                f"{int(base[Col.DEVICES])} device(s)",  # type: ignore[index]
                LEARN,
            )
        )
    return caveats


def frame_caveats(frame: pd.DataFrame) -> list[list[Caveat]]:
    """Each row's caveats, in the frame's order: only ok rows trained in epochs get any."""
    metric, samples = frame_metric(frame), sample_noun(frame)
    trained = frame[Col.STATUS].eq("ok") & (frame[Col.EPOCHS].notna() if Col.EPOCHS in frame else False)
    bases = {
        key: group.loc[group[Col.DEVICES].idxmin()]
        for key, group in frame[trained].groupby(["framework", "strategy"], sort=False)
    }
    caveats: list[list[Caveat]] = []
    for index, row in frame.iterrows():
        if not trained[index]:
            caveats.append([])
            continue
        base = bases[(row[Col.FRAMEWORK], row[Col.STRATEGY])]
        base = None if base[Col.DEVICES] == row[Col.DEVICES] else base
        caveats.append([*timing_caveats(row, samples), *metric_caveats(row, base, metric)])
    return caveats
