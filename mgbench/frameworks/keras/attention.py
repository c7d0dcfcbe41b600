"""What every Keras backend's attention probe shares (each backend's `attention.py` names its own
kernel): the attention a step makes (its tensors, and whether it is causal: GPT-2's is, ViT's is
not), the dtype it computes in, and whether Keras asked its backend for flash attention.

`attend` (`transformer.py`) passes `flash_attention=None`, which lets Keras decide per call: over
JAX it asks `jax.nn.dot_product_attention` for the cuDNN implementation when it judges the
inputs fit, over PyTorch it restricts SDPA to its flash backend likewise, over TensorFlow it
never does. Keras decides inside the call, so the probes record what it asked of the backend
function it delegates to (`calls_to`) rather than repeat its rules."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from unittest import mock

import keras

from mgbench.core.models import ModelSpec
from mgbench.frameworks.keras.models import PRECISION_POLICIES
from mgbench.frameworks.keras.transformer import attend

FLASH_ASKED = "Keras asked for flash"
FLASH_NOT_ASKED = "Keras left flash off"


@dataclass(frozen=True)
class Attention:
    """The attention call a step of a model makes, as `transformer.attend` takes it."""

    size: tuple[int, int, int, int]
    """(batch, tokens, heads, head width) of each of q, k, v (Keras' layout)."""
    is_causal: bool
    """Each token attends to those before it only (GPT-2), which some kernels serve and others
    do not, so the probe asks for it as the model does."""

    def attend(self, query: Any, key: Any, value: Any) -> Any:
        """The model's call on these tensors."""
        return attend(query, key, value, is_causal=self.is_causal)


def attention_of(spec: ModelSpec, input_size: int, batch: int) -> Attention | None:
    """The attention of a step of `spec` at `input_size` (an image's px, a sequence's tokens) on
    `batch` samples; None for a model without attention."""
    if spec.language_model is not None:
        shape = spec.language_model
        return Attention((batch, input_size, shape.heads, shape.head_width), is_causal=True)
    if spec.transformer is not None:
        vit = spec.transformer
        return Attention((batch, vit.tokens(input_size), vit.heads, vit.head_width), is_causal=False)
    return None


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
