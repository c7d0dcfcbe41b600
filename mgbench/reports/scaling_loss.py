"""Why N devices are not N times faster: the speed-up lost, split by what each category added
to the step.

For a framework/strategy measured on `n1` devices (its smallest count) and on `N`:
- each category's seconds per step are its share of the row's breakdown times the row's median
  step time;
- the ideal step at N does the work of the base step scaled by the work per device
  (`r` = (global batch at N / at n1) x (n1 / N): 1 under weak scaling, n1/N under strong), so
  a category adds `added = seconds at N - r x seconds at n1` (negative: it shrank);
- with `ideal` = N / n1, the speed-up the step times give is ideal x r x t1 / tN, and
  ideal - that = sum over categories of ideal x added / tN: each category's loss, in speed-up
  units, in proportion to the time it added;
- `unexplained` is what the measured speed-up (the rows' own, from images/sec: `records.scaling`,
  as the summary shows it) differs from the step times' by: the losses and it sum exactly to
  ideal - measured.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from mgbench.measure.breakdown import CATEGORIES, has_breakdown
from mgbench.reports.columns import Col
from mgbench.reports.summary import GROUP


@dataclass(frozen=True)
class ScalingLoss:
    label: str
    ideal: float
    measured: float
    losses: dict[str, float]
    """Speed-up lost per category (negative: a gain)."""
    unexplained: float


def scaling_loss(base: pd.Series, run: pd.Series) -> ScalingLoss:
    """The loss of `run` against `base`, two ok rows of one framework/strategy with breakdowns,
    each with its speed-up (a frame of `summary.results_frame`)."""
    ideal = run[Col.DEVICES] / base[Col.DEVICES]
    batch_ratio = run[Col.GLOBAL_BATCH] / base[Col.GLOBAL_BATCH]
    work = batch_ratio / ideal
    t1, tn = base[Col.MEDIAN_STEP_SECONDS], run[Col.MEDIAN_STEP_SECONDS]
    losses = {
        name: ideal * (run[Col.BREAKDOWN][name] * tn - work * base[Col.BREAKDOWN][name] * t1) / tn
        for name in CATEGORIES
    }
    measured = float(run[Col.SPEEDUP]) / float(base[Col.SPEEDUP])  # each against their smallest count
    unexplained = (ideal - measured) - sum(losses.values())
    label = f"{run[Col.FRAMEWORK]} {run[Col.STRATEGY]} x{int(run[Col.DEVICES])}"
    return ScalingLoss(label, float(ideal), float(measured), losses, float(unexplained))


def scaling_losses(ok: pd.DataFrame) -> list[ScalingLoss]:
    """Every row on more devices than its framework/strategy's smallest count, where both rows
    have a breakdown and its speed-up is a number (not one past a float's range: 1e10 img/s over
    1e-300)."""
    found = []
    for _, group in ok.sort_values(GROUP + ["devices"]).groupby(GROUP, sort=True):
        base = group.iloc[0]
        for _, run in group.iloc[1:].iterrows():
            if (
                run[Col.DEVICES] > base[Col.DEVICES]
                and has_breakdown(base[Col.BREAKDOWN])
                and has_breakdown(run[Col.BREAKDOWN])
            ):
                found.append(scaling_loss(base, run))
    return [loss for loss in found if math.isfinite(loss.measured)]
