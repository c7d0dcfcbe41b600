"""Which kernel computes a transformer's attention (ViT's, GPT-2's causal one) under Keras over TensorFlow (keras-tf and the tensorflow
loop): Keras' TF backend has no flash attention (`flash_attention=None` becomes False, True is
refused) and no fused kernel; its `dot_product_attention` is written out in TF ops: an einsum
of q and k, logits cast to at least float32 and scaled, a softmax in float32 cast back to the
compute dtype, an einsum with v (GPT-2's causal mask is applied to the logits before the
softmax, in the same ops). Stated from Keras' code (`keras/src/backend/tensorflow/nn.py`),
since TF picks no kernel per call that could be observed."""

from __future__ import annotations

from mgbench.core.models import ModelSpec
from mgbench.frameworks.keras.attention import attention_of, named

UNFUSED = "Keras' TF ops (einsum, softmax in float32, einsum)"


def attention_kernel(spec: ModelSpec, compiled: bool) -> str | None:
    """What a step of `spec` computes its attention with, run by XLA (`compiled`, `--compile`)
    or TensorFlow's kernels; None for a model without attention."""
    if attention_of(spec, input_size=1, batch=1) is None:
        return None
    return named(f"{UNFUSED}, {'XLA-compiled' if compiled else 'TensorFlow kernels'}", flash_asked=False)
