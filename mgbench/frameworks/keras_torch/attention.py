"""Which kernel computes a transformer's attention (ViT's, GPT-2's causal one) under Keras over PyTorch: Keras' torch backend calls
torch's `scaled_dot_product_attention`, restricted to its flash backend when Keras judges the
inputs fit (`flash_attention=None`), else free to choose. Observed as the PyTorch adapter
observes its own (`pytorch.attention.reached_backend`), on one `attend` call with the run's
tensors, together with whether Keras restricted SDPA to flash."""

from __future__ import annotations

import torch

from mgbench.core.models import ModelSpec
from mgbench.frameworks.keras.attention import attention_of, calls_to, compute_dtype, named
from mgbench.frameworks.pytorch.attention import reached_backend


def attention_kernel(spec: ModelSpec, input_size: int, batch: int, device: torch.device, precision: str) -> str | None:
    """The SDPA backend a step of `spec` at `input_size` (px or tokens) on `batch` samples runs its
    attention in on `device` under `precision`'s policy, and whether Keras asked for flash; None
    for a model without attention. Gradients are asked for, as in training: some backends serve
    inference only."""
    attention = attention_of(spec, input_size, batch)
    if attention is None:
        return None
    dtype = getattr(torch, compute_dtype(precision))
    query, key, value = (torch.randn(attention.size, device=device, dtype=dtype, requires_grad=True) for _ in range(3))
    with calls_to(torch.nn.attention, "sdpa_kernel") as restricted:
        kernel = reached_backend(lambda: attention.attend(query, key, value))
    return named(kernel, flash_asked=bool(restricted))
