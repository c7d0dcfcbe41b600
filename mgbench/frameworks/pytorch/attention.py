"""Which kernel computes a transformer's attention in torch: `scaled_dot_product_attention`
(SDPA, which `nn.MultiheadAttention` calls when no attention weights are asked for, as
torchvision's ViT does) picks a backend per call from the device, dtype, shapes and mask:
flash, memory-efficient, cuDNN or the unfused math. The choice is observed, not predicted:
one call on tensors of the run's shape, device and dtype, under a dispatch mode that records
the aten operator it reaches. Keras over PyTorch reaches the same function. GPT-2's attention is
causal (`is_causal=True`), which some backends serve and others do not, so it is observed so."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from mgbench.core.models import ModelSpec

SDPA_BACKENDS = {
    "_scaled_dot_product_flash_attention": "flash",
    "_scaled_dot_product_flash_attention_for_cpu": "flash (CPU)",
    "_scaled_dot_product_efficient_attention": "memory-efficient",
    "_scaled_dot_product_cudnn_attention": "cuDNN",
    "_scaled_dot_product_fused_attention_overrideable": "the device's fused kernel",
}
"""SDPA's fused backends by the aten operator each runs as. The math backend has no operator
of its own: it decomposes into matrix products and a softmax before reaching dispatch."""
UNFUSED = "math (matmul, softmax, matmul)"


class _Operators(TorchDispatchMode):
    """Records the name of every aten operator that reaches dispatch."""

    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self.names.append(func.overloadpacket.__name__)
        return func(*args, **(kwargs or {}))


def reached_backend(attend: Callable[[], Any]) -> str:
    """The backend SDPA runs in when `attend` calls it (directly, or through Keras' torch
    backend), as `torch SDPA: <backend>`."""
    with _Operators() as seen:
        attend()
    backend = next((SDPA_BACKENDS[name] for name in seen.names if name in SDPA_BACKENDS), UNFUSED)
    return f"torch SDPA: {backend}"


def sdpa_backend(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, is_causal: bool = False) -> str:
    """The backend SDPA runs for these (batch, heads, tokens, head width) tensors, masked causally
    with `is_causal`."""
    return reached_backend(
        lambda: torch.nn.functional.scaled_dot_product_attention(query, key, value, is_causal=is_causal)
    )


def attention_shape(spec: ModelSpec, input_size: int) -> tuple[int, int, int, bool] | None:
    """Heads, tokens, head width and whether it is causal, of `spec`'s attention at `input_size`
    (an image's px, a sequence's tokens); None for a model without attention."""
    if spec.language_model is not None:
        shape = spec.language_model
        return shape.heads, input_size, shape.head_width, True
    if spec.transformer is not None:
        return spec.transformer.heads, spec.transformer.tokens(input_size), spec.transformer.head_width, False
    return None


def attention_kernel(
    spec: ModelSpec, input_size: int, batch: int, device: torch.device, dtype: torch.dtype
) -> str | None:
    """The SDPA backend a step of `spec` at `input_size` (px or tokens) runs its attention in, on
    `batch` samples of `dtype` on `device`; None for a model without attention. Gradients are
    asked for, as in training: some backends serve inference only."""
    shape = attention_shape(spec, input_size)
    if shape is None:
        return None
    heads, tokens, head_width, is_causal = shape
    size = (batch, heads, tokens, head_width)
    query, key, value = (torch.randn(size, device=device, dtype=dtype, requires_grad=True) for _ in range(3))
    return sdpa_backend(query, key, value, is_causal)
