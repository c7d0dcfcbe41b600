"""`--target-metric NAME=VALUE`: train in epochs until the validation reaches a level, at most `--epochs`.

A compare in epochs answers "how long to train"; with a target it answers "how long to a model
this good", which is what a user choosing a framework wants when one framework's epochs are
faster but another's reach the same AUC in fewer of them. The validation after each epoch gives
`auc` on every dataset and `top1` on single-label ones (`metrics.split_metrics`); both rise as
the model learns, so a target is reached by an epoch whose validation is at or above it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mgbench.core.errors import UsageError

MULTI_LABEL_METRICS = ("auc",)
"""What the validation of a multi-label dataset (chestxray, multi-label `labels:`) gives that rises."""
SINGLE_LABEL_METRICS = ("auc", "top1")
"""What the validation of a single-label dataset (class folders) gives that rises."""


@dataclass(frozen=True)
class TargetMetric:
    name: str
    value: float

    @classmethod
    def parse(cls, text: str) -> TargetMetric:
        """`auc=0.80` as a target; anything else is one UsageError saying what it takes. A value
        is a share (0 to 1], as both metrics are: `auc=80` would never be reached."""
        name, equals, value = text.partition("=")
        name = name.strip().lower()
        if not equals or name not in SINGLE_LABEL_METRICS:
            raise UsageError(f"--target-metric takes NAME=VALUE with NAME auc or top1 (e.g. auc=0.80), got {text!r}")
        try:
            level = float(value)
        except ValueError:
            level = math.nan
        if not 0 < level <= 1:
            raise UsageError(f"--target-metric {name}= takes a share above 0 and at most 1, got {value.strip()!r}")
        return cls(name, level)

    def check_given(self, multi_label: bool) -> None:
        """Refuse a target the dataset's validation never reports (top1 of a multi-label set), before
        any run launches: every run would train all its epochs without reaching it."""
        given = MULTI_LABEL_METRICS if multi_label else SINGLE_LABEL_METRICS
        if self.name not in given:
            kind = "multi-label" if multi_label else "single-label"
            raise UsageError(
                f"--target-metric {self.name}: the validation of this {kind} dataset gives {', '.join(given)}"
            )

    def reached(self, metrics: dict[str, float]) -> bool:
        """Whether a validation's metrics reach the target (an undefined metric, NaN, does not)."""
        return metrics.get(self.name, math.nan) >= self.value

    def __str__(self) -> str:
        return f"{self.name}={self.value:g}"

    @property
    def label(self) -> str:
        """As reports name it: `val AUC 0.8`."""
        return f"val {metric_label(self.name)} {self.value:g}"


def metric_label(name: str) -> str:
    """A validation or test metric as a reader names it (`auc` -> `AUC`)."""
    return {"auc": "AUC"}.get(name, name)
