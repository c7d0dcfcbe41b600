"""Held-out metrics computed once, from all processes' predictions gathered on one, for every adapter.

A metric a split cannot give (AUC where one class is all the split holds) is `Undefined`: NaN to
arithmetic and formatting, so training goes on and prints it, and carrying why, so that the row
writes null and says why (`defined`) instead of a bare NaN, which is not JSON.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from mgbench.core.objective import PERPLEXITY, for_labels

EvalShard = tuple[float, np.ndarray, np.ndarray]
"""What one process scored of a held-out split: its summed loss, its (n, C) scores (sigmoid or
softmax probabilities) and its targets."""


class Undefined(float):
    """A metric without a value on this split: NaN, with `why` it has none."""

    why: str

    def __new__(cls, why: str) -> Undefined:
        value = super().__new__(cls, math.nan)
        value.why = why
        return value

    def __reduce__(self) -> tuple[type, tuple[str]]:
        # Pickled whole (Chainer hands rank 0's metrics to every process), `why` included.
        return Undefined, (self.why,)


def mean_auc(targets: np.ndarray, scores: np.ndarray) -> float:
    """Mean ROC AUC over labels (multi-label: one column per label) or one-vs-rest over classes.

    Labels without both a positive and a negative in the split have no AUC and are left out of
    the mean, rather than failing the run; when no label has one, the AUC is `Undefined`.
    """
    # Imported here: scikit-learn takes a second or more to import, which every process that
    # reads results (the orchestrator, each run at its start) would pay otherwise.
    from sklearn.metrics import roc_auc_score

    if not np.isfinite(scores).all():
        return Undefined("the model's scores are not finite numbers (its loss diverged)")
    if targets.ndim == 1:
        classes = np.unique(targets)
        if len(classes) < 2:
            return Undefined(f"all {len(targets)} images of the split are of one class; AUC needs two")
        targets = np.eye(scores.shape[1], dtype=np.float32)[targets]
    aucs = [
        roc_auc_score(targets[:, k], scores[:, k])
        for k in range(targets.shape[1])
        if 0 < targets[:, k].sum() < len(targets)
    ]
    if not aucs:
        return Undefined(f"no label has both a positive and a negative among the split's {len(targets)} images")
    return float(np.mean(aucs))


def top1(targets: np.ndarray, scores: np.ndarray) -> float:
    """The share of images whose highest score is their class (single-label targets)."""
    return float(np.mean(np.argmax(scores, axis=1) == targets))


SCORERS: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {"auc": mean_auc, "top1": top1}
"""How each metric an objective declares (`core.objective.METRICS`) is scored from a split's
targets and scores."""


def split_metrics(targets: np.ndarray, scores: np.ndarray, multi_label: bool) -> dict[str, float]:
    """The metrics of the labels' objective (`objective.for_labels`): `auc` (multi-label: the mean
    over findings), and for single-label class folders `top1` as well."""
    return {metric.name: SCORERS[metric.name](targets, scores) for metric in for_labels(multi_label).metrics}


def gathered_metrics(shards: Sequence[EvalShard], multi_label: bool) -> dict[str, float]:
    """`loss` (mean per image) and `split_metrics` over every process's shard of a split."""
    scores = np.concatenate([shard[1] for shard in shards])
    targets = np.concatenate([shard[2] for shard in shards])
    return {"loss": sum(shard[0] for shard in shards) / len(targets), **split_metrics(targets, scores, multi_label)}


def perplexity(mean_loss: float) -> float:
    """exp of the mean loss per token (`objective.PERPLEXITY`); `Undefined` where the loss is no
    finite number, and infinite where its exp is past a float's range."""
    if not math.isfinite(mean_loss):
        return Undefined(f"the held-out loss is not a finite number ({mean_loss})")
    try:
        return math.exp(mean_loss)
    except OverflowError:
        return math.inf


def language_model_metrics(mean_loss: float) -> dict[str, float]:
    """What a language model's held-out split gives (`objective.LANGUAGE_MODEL`), from its mean
    loss per token over every process's share: `loss`, and `perplexity`."""
    return {"loss": mean_loss, PERPLEXITY.name: perplexity(mean_loss)}


def diverged(losses: Sequence[float]) -> tuple[list[float], int | None]:
    """`losses` (one per training step, in order) with each that is no finite number as
    `Undefined`, saying at which step the loss diverged, and that step (1-based; None: every loss
    is a number). A learning rate too high, or a start that holds NaN, shows so: the run's
    throughput still holds, its losses from that step on have no value."""
    step = next((index for index, loss in enumerate(losses, start=1) if not math.isfinite(loss)), None)
    if step is None:
        return list(losses), None
    why = Undefined(f"the loss diverged at step {step} ({losses[step - 1]})")
    return [loss if math.isfinite(loss) else why for loss in losses], step


def defined(value: Any) -> tuple[Any, list[str]]:
    """`value` (a row's record, or any JSON-like part of it) with every NaN or infinite number
    as None, and a line per reason saying which numbers have no value (by where they are, as
    `test_metrics.auc`) and why: its `Undefined.why`, or that it is not a finite number. Numbers
    without a value for one reason share a line, and a list's are named by the first and a count:
    a diverged run's thousand losses are one line, not a thousand."""
    value, missing = _without_undefined(value, "")
    return value, [f"{', '.join(wheres)} undefined: {why}" for why, wheres in _by_reason(missing).items()]


def _by_reason(missing: list[tuple[str, str]]) -> dict[str, list[str]]:
    """Where each number without a value is, by why it has none, in the order met."""
    reasons: dict[str, list[str]] = {}
    for where, why in missing:
        reasons.setdefault(why, []).append(where)
    return reasons


def _without_undefined(value: Any, where: str) -> tuple[Any, list[tuple[str, str]]]:
    """`defined`'s walk: the value with None for each number without one, and (where, why) of each."""
    if isinstance(value, float) and not math.isfinite(value):
        return None, [(where, value.why if isinstance(value, Undefined) else f"{value} is not a finite number")]
    if isinstance(value, dict):
        pairs = [
            (key, _without_undefined(item, f"{where}.{key}" if where else str(key))) for key, item in value.items()
        ]
        return {key: item for key, (item, _) in pairs}, [each for _, (_, found) in pairs for each in found]
    if isinstance(value, list):
        items = [_without_undefined(item, f"{where}[{index}]") for index, item in enumerate(value)]
        missing = [each for _, found in items for each in found]
        if len(missing) > 1 and all(isinstance(item, int | float) for item in value):
            missing = [
                (f"{first} and {len(rest)} more" if rest else first, why)
                for why, (first, *rest) in _by_reason(missing).items()
            ]
        return [item for item, _ in items], missing
    return value, []
