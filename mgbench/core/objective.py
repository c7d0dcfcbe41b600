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

from dataclasses import dataclass
from typing import Literal

LossKind = Literal["softmax", "sigmoid", "next_token"]
"""Which cross-entropy the head's logits train with: a softmax over the classes (one label an
image), a sigmoid per output (binary cross-entropy per label, averaged: several labels an image),
or a softmax over the vocabulary at every position of a sequence, averaged over its tokens (a
language model's next token)."""


@dataclass(frozen=True)
class Metric:
    """A figure a held-out split gives, by the key it is reported under and `--target-metric` names."""

    name: str
    label: str
    """As a reader names it (`AUC`)."""
    higher_is_better: bool
    """AUC and top-1 rise as the model learns; a loss or a perplexity would fall."""

    def reached(self, value: float, level: float) -> bool:
        """Whether `value` is at `level` or beyond it in the metric's direction (NaN never is)."""
        return value >= level if self.higher_is_better else value <= level


AUC = Metric("auc", "AUC", higher_is_better=True)
TOP1 = Metric("top1", "top1", higher_is_better=True)
PERPLEXITY = Metric("perplexity", "perplexity", higher_is_better=False)
"""exp of the mean loss per token: the vocabulary size a uniform guess would need to do as well."""
METRICS: dict[str, Metric] = {metric.name: metric for metric in (AUC, TOP1, PERPLEXITY)}
"""Every metric an objective here is scored by."""


@dataclass(frozen=True)
class Objective:
    name: str
    """As rows record it."""
    loss: LossKind
    metrics: tuple[Metric, ...]
    """What a held-out split's predictions are scored by (`measure.metrics.SCORERS`), in the
    order reported, besides the split's mean loss."""

    @property
    def multi_label(self) -> bool:
        """Each sample has several labels, one sigmoid output each (multi-hot targets)."""
        return self.loss == "sigmoid"


MULTI_LABEL_BCE = Objective("multi_label_bce", "sigmoid", (AUC,))
"""CheXNet's: binary cross-entropy of a sigmoid per finding, judged by the mean AUC over findings
(top-1 has no meaning where an image has several labels, or none)."""
SOFTMAX_CROSS_ENTROPY = Objective("softmax_cross_entropy", "softmax", (AUC, TOP1))
"""The classifiers': cross-entropy of a softmax over the classes, judged by top-1 and one-vs-rest AUC."""


LANGUAGE_MODEL = Objective("language_model", "next_token", (PERPLEXITY,))
"""A language model's: cross-entropy of the next token at every position, judged by the held-out
loss and its perplexity."""


def for_labels(multi_label: bool) -> Objective:
    """The objective of an image dataset's task: several labels an image, or one."""
    return MULTI_LABEL_BCE if multi_label else SOFTMAX_CROSS_ENTROPY
