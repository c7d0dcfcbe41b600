"""The work per training image of each (model, input size) in a compare, counted once.

The count runs in this process (the orchestrator's interpreter) through the PyTorch family's
counter on the reference architecture (`mgbench.frameworks.torch.flops`), so every framework's
row of a model carries the same figure, whatever framework trained it. Where this interpreter
has no torch the rows carry no work figures.
"""

from __future__ import annotations

import functools

from mgbench.common.models import model_spec
from mgbench.common.work import ModelWork


@functools.cache
def model_work(model: str, image_size: int) -> ModelWork | None:
    """FLOPs and saved activations per image of `model` at `image_size` px (None: no torch here)."""
    try:
        from mgbench.frameworks.torch.flops import count_work
    except ImportError:
        return None
    return count_work(model_spec(model), image_size)
