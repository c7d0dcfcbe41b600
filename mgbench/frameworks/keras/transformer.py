"""The layers of torchvision's vision transformer in Keras 3, for every Keras backend: the class
token and position embedding, the self-attention, and the pre-norm encoder block.

The attention goes through one call, `attend` (Keras' `dot_product_attention`, letting Keras
decide on flash), which ViT, GPT-2 (causally, `gpt2.py`) and every backend's attention probe (`attention.py` of each
Keras adapter package) share, so the kernel a row names is the one the model runs.
"""

from __future__ import annotations

from typing import Any

import keras

from mgbench.core.architectures import VisionTransformer


def attend(query: Any, key: Any, value: Any, is_causal: bool = False) -> Any:
    """Scaled dot-product attention over (batch, tokens, heads, head width) tensors, scaled by
    1/sqrt(head width): unmasked, torchvision's ViT; masked causally with `is_causal`, GPT-2's.
    `flash_attention=None` leaves flash to Keras."""
    return keras.ops.dot_product_attention(query, key, value, is_causal=is_causal, flash_attention=None)


class ClassTokenAndPositions(keras.layers.Layer):
    """Prepends the class token to the patch tokens, then adds the position embedding: torchvision
    holds them as bare parameters (the model's `class_token`, its encoder's `pos_embedding`), here
    the weights of this layer. Both start at zero; `--init` sets them."""

    def build(self, input_shape: tuple[int | None, ...]) -> None:
        _, patches, width = input_shape
        self.class_token = self.add_weight(shape=(1, 1, width), initializer="zeros", name="class_token")
        self.pos_embedding = self.add_weight(shape=(1, patches + 1, width), initializer="zeros", name="pos_embedding")

    def call(self, patches: Any) -> Any:
        batch = keras.ops.shape(patches)[0]
        token = keras.ops.broadcast_to(self.class_token, (batch, 1, self.class_token.shape[-1]))
        return keras.ops.concatenate([token, patches], axis=1) + self.pos_embedding

    def compute_output_shape(self, input_shape: tuple[int | None, ...]) -> tuple[int | None, ...]:
        batch, patches, width = input_shape
        return batch, patches + 1, width


class SelfAttention(keras.layers.Layer):
    """torch's `nn.MultiheadAttention` as torchvision's ViT uses it: one fused q,k,v projection
    (`in_proj`, torch's `in_proj_weight` stacking q, k, v), heads of width `width // heads`,
    then the output projection (`out_proj`); the same four tensors as torch's."""

    def __init__(self, width: int, heads: int, **kwargs: Any):
        super().__init__(**kwargs)
        self.width, self.heads = width, heads
        self.in_proj = keras.layers.Dense(3 * width, name="in_proj")
        self.out_proj = keras.layers.Dense(width, name="out_proj")

    def build(self, input_shape: tuple[int | None, ...]) -> None:
        self.in_proj.build(input_shape)
        self.out_proj.build(input_shape)

    def call(self, tokens: Any) -> Any:
        length = tokens.shape[1]
        heads = (-1, length, self.heads, self.width // self.heads)
        query, key, value = (keras.ops.reshape(part, heads) for part in keras.ops.split(self.in_proj(tokens), 3, -1))
        return self.out_proj(keras.ops.reshape(attend(query, key, value), (-1, length, self.width)))

    def compute_output_shape(self, input_shape: tuple[int | None, ...]) -> tuple[int | None, ...]:
        return input_shape


def encoder_block(tokens: keras.KerasTensor, shape: VisionTransformer, prefix: str) -> keras.KerasTensor:
    """torchvision's `EncoderBlock`: x + attention(ln_1(x)), then + mlp(ln_2(x)), the MLP's GELU
    exact (erf), its layers named by their index in torch's `MLPBlock` (0 and 3)."""
    norm = lambda name: keras.layers.LayerNormalization(epsilon=shape.layer_norm_epsilon, name=f"{prefix}_{name}")  # noqa: E731
    attended = SelfAttention(shape.width, shape.heads, name=f"{prefix}_self_attention")(norm("ln_1")(tokens))
    tokens = keras.layers.Add()([tokens, attended])
    hidden = keras.layers.Dense(shape.mlp_width, name=f"{prefix}_mlp_0")(norm("ln_2")(tokens))
    hidden = keras.layers.Activation(lambda x: keras.activations.gelu(x, approximate=False))(hidden)
    return keras.layers.Add()([tokens, keras.layers.Dense(shape.width, name=f"{prefix}_mlp_3")(hidden)])
