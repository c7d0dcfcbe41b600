"""Held-out metrics computed once, from all processes' predictions gathered on one, for every adapter.

A metric a split cannot give (AUC where one class is all the split holds) is `Undefined`: NaN to
arithmetic and formatting, so training goes on and prints it, and carrying why, so that the row
writes null and says why (`defined`) instead of a bare NaN, which is not JSON.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

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


def split_metrics(targets: np.ndarray, scores: np.ndarray, multi_label: bool) -> dict[str, float]:
    """`auc` (multi-label: the mean over findings), and for single-label class folders `top1`
    (the share of images whose highest score is their class) as well."""
    metrics = {"auc": mean_auc(targets, scores)}
    if not multi_label:
        metrics["top1"] = float(np.mean(np.argmax(scores, axis=1) == targets))
    return metrics


def gathered_metrics(shards: Sequence[EvalShard], multi_label: bool) -> dict[str, float]:
    """`loss` (mean per image) and `split_metrics` over every process's shard of a split."""
    scores = np.concatenate([shard[1] for shard in shards])
    targets = np.concatenate([shard[2] for shard in shards])
    return {"loss": sum(shard[0] for shard in shards) / len(targets), **split_metrics(targets, scores, multi_label)}


def defined(value: Any, where: str = "") -> tuple[Any, list[str]]:
    """`value` (a row's record, or any JSON-like part of it) with every NaN or infinite number
    as None, and one line per such number saying which it was (`where`, as `test_metrics.auc`)
    and why it has no value: its `Undefined.why`, or that it is not a finite number (a loss that
    diverged)."""
    if isinstance(value, float) and not math.isfinite(value):
        why = value.why if isinstance(value, Undefined) else f"{value} is not a finite number"
        return None, [f"{where} undefined: {why}"]
    if isinstance(value, dict):
        pairs = [(key, defined(item, f"{where}.{key}" if where else str(key))) for key, item in value.items()]
        return {key: item for key, (item, _) in pairs}, [line for _, (_, lines) in pairs for line in lines]
    if isinstance(value, list):
        items = [defined(item, f"{where}[{index}]") for index, item in enumerate(value)]
        return [item for item, _ in items], [line for _, lines in items for line in lines]
    return value, []
