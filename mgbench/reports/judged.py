"""What a frame's trained rows are judged by and called, read from their model, not assumed to be images.

Several reports name a row's samples, its input's size and its test metric: an image model's
rows train images of a side in px and are judged by AUC (top-1 too for class folders), as
reports always said; a language model's train tokens of a sequence length and are judged by
its objective's first metric (`core.objective.LANGUAGE_MODEL`: the held-out loss), read in its
own direction (`Metric.higher_is_better`). Each report asks here, so none branches on the model.
"""

from __future__ import annotations

import pandas as pd

from mgbench.core.inputs import IMAGES, SampleInput
from mgbench.core.models import known_model
from mgbench.core.objective import AUC, LOSS, METRICS, Metric
from mgbench.reports.columns import Col
from mgbench.reports.units import frame_model, frame_unit


def model_input(model: object) -> SampleInput | None:
    """The native input of `model` (None: a model the catalogue does not hold, a plugin's not loaded here)."""
    spec = known_model(model)
    return None if spec is None else spec.input


def size_name(model: object) -> str:
    """What sizes `model`'s input, as a sentence names it: `image size`, `seq len` (the job's
    field, `SampleInput.size_field`); an unknown model's is an image's."""
    native = model_input(model)
    return "image size" if native is None else native.size_field.replace("_", " ")


def test_metric(frame: pd.DataFrame) -> str:
    """The test split's metric an image model's epochs rows are judged by: `top1` where any row
    has it (class folders), else `auc`."""
    tests = frame[Col.TEST_METRICS] if Col.TEST_METRICS in frame else []
    return "top1" if any(isinstance(test, dict) and "top1" in test for test in tests) else "auc"


def frame_metric(frame: pd.DataFrame) -> Metric:
    """The test metric `frame`'s rows are judged by: its model objective's first where that
    objective has no AUC (a language model's loss), else the one the ranking reads
    (`test_metric`: top-1 for class folders, else AUC)."""
    metrics = _objective_metrics(frame)
    return METRICS[test_metric(frame)] if AUC in metrics else metrics[0]


def curve_metric(frame: pd.DataFrame) -> Metric:
    """The validation metric a chart plots per epoch beside the loss: AUC for an image model's
    rows, its objective's first other than the loss for another's (a language model's perplexity)."""
    metrics = _objective_metrics(frame)
    return AUC if AUC in metrics else next(metric for metric in metrics if metric != LOSS)


def _objective_metrics(frame: pd.DataFrame) -> tuple[Metric, ...]:
    """The metrics of the objective `frame`'s model declares (a compare trains one model); AUC
    for a frame without rows or of a model the catalogue does not hold, as reports always read."""
    spec = frame_model(frame)
    return (AUC,) if spec is None else spec.objective.metrics


def sample_noun(frame: pd.DataFrame) -> str:
    """What `frame`'s rows train, plural, as a sentence names it: `images`, `tokens`."""
    return f"{(frame_unit(frame).one or IMAGES.one)}s"
