"""`--target-metric NAME=VALUE`: train in epochs until the validation reaches a level, at most `--epochs`.

A compare in epochs answers "how long to train"; with a target it answers "how long to a model
this good", which is what a user choosing a framework wants when one framework's epochs are
faster but another's reach the same AUC in fewer of them. The validation after each epoch gives
the metrics of the model's objective as the dataset fits it (`core.objective`: `auc` on every
image dataset, `top1` on single-label ones, a language model's `loss` and `perplexity`), each
read in its direction (`Metric.higher_is_better`): a target is reached by an epoch whose
validation is at it or beyond it (at or above an AUC, at or below a perplexity).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mgbench.core.errors import UsageError
from mgbench.core.objective import METRICS, Metric, Objective


@dataclass(frozen=True)
class TargetMetric:
    name: str
    value: float

    @classmethod
    def parse(cls, text: str) -> TargetMetric:
        """`auc=0.80` (or `perplexity=90`) as a target; anything else is one UsageError saying what
        it takes. A value is one its metric takes (`Metric.levels`: a share for AUC, above 1 for a
        perplexity): `auc=80` would never be reached."""
        name, equals, value = text.partition("=")
        name = name.strip().lower()
        if not equals or name not in METRICS:
            names = " or ".join(METRICS)
            raise UsageError(f"--target-metric takes NAME=VALUE with NAME {names} (e.g. auc=0.80), got {text!r}")
        try:
            level = float(value)
        except ValueError:
            level = math.nan
        if not METRICS[name].levels.hold(level):
            raise UsageError(f"--target-metric {name}= takes {METRICS[name].levels.described}, got {value.strip()!r}")
        return cls(name, level)

    @property
    def metric(self) -> Metric:
        return METRICS[self.name]

    def check_given(self, objective: Objective) -> None:
        """Refuse a target the validation of the model's objective, as the dataset fits it, never
        reports (top1 of a multi-label set, auc of a language model), before any run launches:
        every run would train all its epochs without reaching it."""
        given = [metric.name for metric in objective.metrics]
        if self.name not in given:
            raise UsageError(
                f"--target-metric {self.name}: the validation of this {objective.task} gives {', '.join(given)}"
            )

    def reached(self, metrics: dict[str, float]) -> bool:
        """Whether a validation's metrics reach the target in its metric's direction (an
        undefined metric, NaN, does not)."""
        return self.metric.reached(metrics.get(self.name, math.nan), self.value)

    def __str__(self) -> str:
        return f"{self.name}={self.value:g}"

    @property
    def label(self) -> str:
        """As reports name it: `val AUC 0.8`."""
        return f"val {metric_label(self.name)} {self.value:g}"


def metric_label(name: str) -> str:
    """A validation or test metric as a reader names it (`auc` -> `AUC`)."""
    return METRICS[name].label if name in METRICS else name
