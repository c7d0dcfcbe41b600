"""The unit a model's rate is shown in, looked up by the model's name as a row holds it.

A row holds one rate, samples per second (`samples_per_sec`); every table, chart and progress
line shows it in the unit its model declares (`SampleInput.unit`): an image model's rows read
img/s as they always have, a language model's tokens/s (a sample is `seq_len` tokens). A report
reads rows, not jobs, so it asks here by the model's name and the sequence length the row holds.
"""

from __future__ import annotations

import math
import numbers

from mgbench.core.inputs import IMAGES, RateUnit, TokenInput
from mgbench.core.models import known_model


def rate_unit(model: object, seq_len: object = None) -> RateUnit:
    """The unit the rate of `model`'s rows is shown in: its input's (`ModelSpec.input`), a token
    input at `seq_len` tokens where the row's job gave one (a whole number; None or NaN: the
    model's context). A model the catalogue does not hold (a plugin's, not loaded where an old
    folder is read) is shown in images, the unit rates were written in before tokens were."""
    spec = known_model(model)
    if spec is None:
        return IMAGES
    native = spec.input
    # A frame's column gives numpy's numbers (NaN where a row has none), a row's JSON Python's.
    length = float(seq_len) if isinstance(seq_len, numbers.Real) else math.nan
    if isinstance(native, TokenInput) and math.isfinite(length) and length >= 1:
        return native.sized(int(length)).unit
    return native.unit
