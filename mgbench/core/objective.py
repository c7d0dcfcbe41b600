"""What a model trains towards and how it is judged: its loss, and the metrics of its held-out splits.

Every framework builds the loss a model's `Objective` names (`build_loss` in each framework's
`models.py`, one table each), the validation after each epoch reports the objective's metrics
(`measure.metrics.split_metrics`, besides the loss every validation gives), and `--target-metric`
takes one of them, read in its own direction. A model declares its
objective in the catalogue (`ModelSpec.objective`); a dataset refits it to its labels
(`for_labels`: one sigmoid per label where an image has several, a softmax over classes where it
has one).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

LossKind = Literal["softmax", "sigmoid", "next_token"]
"""Which cross-entropy the head's logits train with: a softmax over the classes (one label an
image), a sigmoid per output (binary cross-entropy per label, averaged: several labels an image),
or a softmax over the vocabulary at every position of a sequence, averaged over its tokens (a
language model's next token)."""


@dataclass(frozen=True)
class Levels:
    """The values a metric takes: above `above`, and at most `at_most`. A target outside them
    could never be reached (`auc=80`, `perplexity=0.5`), so `--target-metric` refuses it."""

    above: float
    at_most: float
    described: str
    """As the refusal names the range (`a share above 0 and at most 1`)."""

    def hold(self, level: float) -> bool:
        """Whether `level` is a value the metric can take (NaN is not)."""
        return self.above < level <= self.at_most


SHARE = Levels(0.0, 1.0, "a share above 0 and at most 1")
ABOVE_ONE = Levels(1.0, math.inf, "a number above 1")
POSITIVE = Levels(0.0, math.inf, "a number above 0")


@dataclass(frozen=True)
class Metric:
    """A figure a held-out split gives, by the key it is reported under and `--target-metric` names."""

    name: str
    label: str
    """As a reader names it (`AUC`)."""
    higher_is_better: bool
    """AUC and top-1 rise as the model learns; a loss or a perplexity falls."""
    levels: Levels
    """The values it takes: a share for AUC and top-1, any number above 1 for a perplexity."""

    def reached(self, value: float, level: float) -> bool:
        """Whether `value` is at `level` or beyond it in the metric's direction (NaN never is)."""
        return value >= level if self.higher_is_better else value <= level


AUC = Metric("auc", "AUC", higher_is_better=True, levels=SHARE)
TOP1 = Metric("top1", "top1", higher_is_better=True, levels=SHARE)
PERPLEXITY = Metric("perplexity", "perplexity", higher_is_better=False, levels=ABOVE_ONE)
"""exp of the mean loss per token: the vocabulary size a uniform guess would need to do as well."""
LOSS = Metric("loss", "loss", higher_is_better=False, levels=POSITIVE)
"""The split's mean loss (per token for a language model), which every validation gives: a
language model's objective lists it, so that `--target-metric loss=4.5` names its held-out loss."""
METRICS: dict[str, Metric] = {metric.name: metric for metric in (AUC, TOP1, PERPLEXITY, LOSS)}
"""Every metric an objective here is scored by."""


@dataclass(frozen=True)
class Objective:
    name: str
    """As rows record it."""
    loss: LossKind
    metrics: tuple[Metric, ...]
    """What a held-out split's predictions are scored by (`measure.metrics.SCORERS`), in the
    order reported, besides the split's mean loss (which a language model's lists as well: it is
    the figure its perplexity is read from, and a target may name either)."""
    task: str
    """What its validation scores, as a refusal names it (`multi-label dataset`, `language model`)."""

    @property
    def multi_label(self) -> bool:
        """Each sample has several labels, one sigmoid output each (multi-hot targets)."""
        return self.loss == "sigmoid"


MULTI_LABEL_BCE = Objective("multi_label_bce", "sigmoid", (AUC,), "multi-label dataset")
"""CheXNet's: binary cross-entropy of a sigmoid per finding, judged by the mean AUC over findings
(top-1 has no meaning where an image has several labels, or none)."""
SOFTMAX_CROSS_ENTROPY = Objective("softmax_cross_entropy", "softmax", (AUC, TOP1), "single-label dataset")
"""The classifiers': cross-entropy of a softmax over the classes, judged by top-1 and one-vs-rest AUC."""


LANGUAGE_MODEL = Objective("language_model", "next_token", (LOSS, PERPLEXITY), "language model")
"""A language model's: cross-entropy of the next token at every position, judged by the held-out
loss and its perplexity."""


def for_labels(multi_label: bool) -> Objective:
    """The objective of an image dataset's task: several labels an image, or one."""
    return MULTI_LABEL_BCE if multi_label else SOFTMAX_CROSS_ENTROPY
