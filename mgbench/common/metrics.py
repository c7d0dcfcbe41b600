"""Validation metrics computed once, from all processes' predictions gathered on one."""

from __future__ import annotations

import numpy as np
from sklearn.metrics import roc_auc_score


def mean_auc(targets: np.ndarray, scores: np.ndarray) -> float:
    """Mean ROC AUC over labels (multi-label: one column per label) or one-vs-rest over classes.

    Labels without both a positive and a negative in the validation set have no AUC and are
    left out of the mean (NaN when no label has one), rather than failing the run.
    """
    if targets.ndim == 1:
        targets = np.eye(scores.shape[1], dtype=np.float32)[targets]
    aucs = [
        roc_auc_score(targets[:, k], scores[:, k])
        for k in range(targets.shape[1])
        if 0 < targets[:, k].sum() < len(targets)
    ]
    return float(np.mean(aucs)) if aucs else float("nan")
