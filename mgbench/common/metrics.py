"""Held-out metrics computed once, from all processes' predictions gathered on one, for every adapter."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.metrics import roc_auc_score

EvalShard = tuple[float, np.ndarray, np.ndarray]
"""What one process scored of a held-out split: its summed loss, its (n, C) scores (sigmoid or
softmax probabilities) and its targets."""


def mean_auc(targets: np.ndarray, scores: np.ndarray) -> float:
    """Mean ROC AUC over labels (multi-label: one column per label) or one-vs-rest over classes.

    Labels without both a positive and a negative in the split have no AUC and are left out of
    the mean (NaN when no label has one), rather than failing the run.
    """
    if targets.ndim == 1:
        targets = np.eye(scores.shape[1], dtype=np.float32)[targets]
    aucs = [
        roc_auc_score(targets[:, k], scores[:, k])
        for k in range(targets.shape[1])
        if 0 < targets[:, k].sum() < len(targets)
    ]
    return float(np.mean(aucs)) if aucs else float("nan")


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
