"""What every Keras backend's attention probe shares (each backend's `attention.py` names its own
kernel): the tensors a step's attention takes, the dtype it computes in, and whether Keras asked
its backend for flash attention.

`attend` (`transformer.py`) passes `flash_attention=None`, which lets Keras decide per call: over
JAX it asks `jax.nn.dot_product_attention` for the cuDNN implementation when it judges the
inputs fit, over PyTorch it restricts SDPA to its flash backend likewise, over TensorFlow it
never does. Keras decides inside the call, so the probes record what it asked of the backend
function it delegates to (`calls_to`) rather than repeat its rules."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import keras

from mgbench.core.models import ModelSpec
from mgbench.frameworks.keras.models import PRECISION_POLICIES

FLASH_ASKED = "Keras asked for flash"
FLASH_NOT_ASKED = "Keras left flash off"


def attention_shape(spec: ModelSpec, image_size: int, batch: int) -> tuple[int, int, int, int] | None:
    """The (batch, tokens, heads, head width) of each of q, k, v in a step of `spec` at
    `image_size` px on `batch` images (Keras' layout); None for a model without attention."""
    shape = spec.transformer
    if shape is None:
        return None
    return batch, shape.tokens(image_size), shape.heads, shape.head_width


def compute_dtype(precision: str) -> str:
    """The dtype the attention's inputs come in under the run's precision policy."""
    return keras.mixed_precision.DTypePolicy(PRECISION_POLICIES[precision]).compute_dtype


@contextmanager
def calls_to(owner: Any, name: str) -> Iterator[list[dict[str, Any]]]:
    """Records the keyword arguments of every call made to `owner.name` inside the block (the
    call itself goes through unchanged)."""
    original = getattr(owner, name)
    calls: list[dict[str, Any]] = []

    def recorded(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs)
        return original(*args, **kwargs)

    with mock.patch.object(owner, name, recorded):
        yield calls


def named(kernel: str, flash_asked: bool) -> str:
    """A row's `attention_kernel`: what ran, then whether Keras asked for flash."""
    return f"{kernel}; {FLASH_ASKED if flash_asked else FLASH_NOT_ASKED}"
