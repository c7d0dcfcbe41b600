"""Which kernel computes a transformer's attention (ViT's, GPT-2's causal one) under Keras over JAX: Keras' JAX backend calls
`jax.nn.dot_product_attention`, asking for its cuDNN implementation first when it judges the
inputs fit (`flash_attention=None`; on refusal it falls back to XLA's), else for XLA's.
Observed, not predicted: one `attend` call (with its gradients, as in training) is lowered and
compiled for the run's device on arrays of the run's shape and dtype, and the kernel named
from the compiled HLO: a cuDNN fused-attention custom call, or XLA's own fusions."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp

from mgbench.core.models import ModelSpec
from mgbench.frameworks.keras.attention import attention_of, calls_to, compute_dtype, named

CUDNN_ATTENTION = re.compile(r"__cudnn\$fmha\w*")
"""The custom calls of cuDNN's fused (flash) attention in XLA's HLO, forward and backward."""
XLA_OWN = "XLA's own (dot, softmax, dot fusions)"
CUDNN_IMPLEMENTATION = "cudnn"
"""What Keras passes as `implementation` when it asks JAX for flash attention."""


def kernel_in(hlo: str) -> str:
    """The attention kernel a compiled HLO module runs: cuDNN flash attention, named with its
    custom calls, or XLA's own."""
    calls = sorted(set(CUDNN_ATTENTION.findall(hlo)))
    return f"cuDNN flash attention ({', '.join(calls)})" if calls else XLA_OWN


def attention_kernel(spec: ModelSpec, input_size: int, batch: int, device: jax.Device, precision: str) -> str | None:
    """The kernel a step of `spec` at `input_size` (px or tokens) on `batch` samples runs its
    attention in on `device` under `precision`'s policy, and whether Keras asked for flash; None
    for a model without attention."""
    attention = attention_of(spec, input_size, batch)
    if attention is None:
        return None
    query, key, value = (jax.device_put(jnp.zeros(attention.size, compute_dtype(precision)), device) for _ in range(3))
    step = jax.grad(lambda q, k, v: attention.attend(q, k, v).astype(jnp.float32).sum(), argnums=(0, 1, 2))
    with calls_to(jax.nn, "dot_product_attention") as calls:
        hlo = jax.jit(step).lower(query, key, value).compile().as_text()
    asked = any(call.get("implementation") == CUDNN_IMPLEMENTATION for call in calls)
    return named(kernel_in(hlo), flash_asked=asked)
