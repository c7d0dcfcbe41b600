"""GPT-2 in Keras 3 at a shape of `core.gpt2` (`GPT2_SHAPES`), for every Keras backend: the same
architecture as the PyTorch build (`frameworks/pytorch/gpt2.py`), in keras.ops only.

The token embedding is a `ReversibleEmbedding` called twice: forward on the tokens, and in reverse
(its matrix transposed) as the output projection, so the two are one variable as in PyTorch.
Attention is `keras.ops.dot_product_attention(is_causal=True)`, leaving flash to Keras
(`flash_attention=None`, as `transformer.attend` does for ViT). Each layer that holds weights is
named after the PyTorch module holding them, "_" for "." (`keras_name`), and `gpt2_weights` maps
the shared start onto them by those names.

Not a catalogue model yet (that needs a job input of tokens): `build_gpt2` is what builds it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import keras

from mgbench.core.errors import UsageError
from mgbench.core.gpt2 import GPT2, INIT_STD


def keras_name(module: str) -> str:
    """The Keras layer for the PyTorch module `module` (Keras over PyTorch registers variables
    under their layers' paths, where torch refuses a ".")."""
    return module.replace(".", "_")


def modules(shape: GPT2) -> Iterator[str]:
    """The PyTorch modules of `shape` that hold weights, as the Keras build has a layer for each
    (attention's two projections are one layer, `attn`)."""
    yield "wte"
    yield "wpe"
    for index in range(shape.layers):
        yield from (f"h.{index}.{part}" for part in ("ln_1", "attn", "ln_2", "mlp.c_fc", "mlp.c_proj"))
    yield "ln_f"


class PositionEmbedding(keras.layers.Layer):
    """Adds a learned vector per position (`embeddings`, context x width, PyTorch's `wpe.weight`)
    to the token embeddings of a sequence up to the context long."""

    def __init__(self, context: int, width: int, initializer: keras.initializers.Initializer, **kwargs: Any):
        super().__init__(**kwargs)
        self.context, self.width, self.initializer = context, width, initializer

    def build(self, input_shape: tuple[int | None, ...]) -> None:
        self.embeddings = self.add_weight(
            shape=(self.context, self.width), initializer=self.initializer, name="embeddings"
        )

    def call(self, tokens: Any) -> Any:
        return tokens + self.embeddings[: keras.ops.shape(tokens)[1]]

    def compute_output_shape(self, input_shape: tuple[int | None, ...]) -> tuple[int | None, ...]:
        return input_shape


class CausalSelfAttention(keras.layers.Layer):
    """PyTorch's `attn`: the fused q,k,v projection (`c_attn`), causal attention over heads of
    `width // heads`, the output projection (`c_proj`)."""

    def __init__(self, shape: GPT2, seeds: keras.random.SeedGenerator, **kwargs: Any):
        super().__init__(**kwargs)
        self.width, self.heads = shape.width, shape.heads
        self.c_attn = _dense(3 * shape.width, INIT_STD, seeds, "c_attn")
        self.c_proj = _dense(shape.width, shape.residual_std, seeds, "c_proj")

    def build(self, input_shape: tuple[int | None, ...]) -> None:
        self.c_attn.build(input_shape)
        self.c_proj.build(input_shape)

    def call(self, tokens: Any) -> Any:
        length = tokens.shape[1]
        split = (-1, length, self.heads, self.width // self.heads)
        query, key, value = (keras.ops.reshape(part, split) for part in keras.ops.split(self.c_attn(tokens), 3, -1))
        attended = keras.ops.dot_product_attention(query, key, value, is_causal=True, flash_attention=None)
        return self.c_proj(keras.ops.reshape(attended, (-1, length, self.width)))

    def compute_output_shape(self, input_shape: tuple[int | None, ...]) -> tuple[int | None, ...]:
        return input_shape


def _dense(units: int, std: float, seeds: keras.random.SeedGenerator, name: str) -> keras.layers.Dense:
    return keras.layers.Dense(units, kernel_initializer=keras.initializers.RandomNormal(0.0, std, seeds), name=name)


def _block(tokens: keras.KerasTensor, shape: GPT2, seeds: keras.random.SeedGenerator, index: int) -> keras.KerasTensor:
    """PyTorch's `Block`: x + attn(ln_1(x)), then + mlp(ln_2(x)), GELU's tanh approximation."""
    name = lambda part: keras_name(f"h.{index}.{part}")  # noqa: E731
    norm = lambda part: keras.layers.LayerNormalization(epsilon=shape.layer_norm_epsilon, name=name(part))  # noqa: E731
    attended = CausalSelfAttention(shape, seeds, name=name("attn"))(norm("ln_1")(tokens))
    tokens = keras.layers.Add()([tokens, attended])
    hidden = _dense(shape.mlp_width, INIT_STD, seeds, name("mlp.c_fc"))(norm("ln_2")(tokens))
    hidden = keras.layers.Activation(lambda x: keras.activations.gelu(x, approximate=True))(hidden)
    return keras.layers.Add()([tokens, _dense(shape.width, shape.residual_std, seeds, name("mlp.c_proj"))(hidden)])


def build_gpt2(shape: GPT2, seed: int, seq_len: int | None = None) -> keras.Model:
    """GPT-2 at `shape` for sequences of `seq_len` tokens (default: the context): (batch,
    seq_len) int32 tokens in, (batch, seq_len, padded vocabulary) logits out. Initialised as
    GPT-2 is by Keras' generator seeded with `seed` (`--init same` loads the shared draw
    instead: `gpt2_weights.load_gpt2_initial`)."""
    seq_len = seq_len or shape.context
    if refusal := shape.length_refusal(seq_len):
        raise UsageError(refusal)
    seeds = keras.random.SeedGenerator(seed)
    normal = keras.initializers.RandomNormal(0.0, INIT_STD, seeds)
    tokens = keras.Input((seq_len,), dtype="int32", name="tokens")
    embedding = keras.layers.ReversibleEmbedding(
        shape.padded_vocabulary, shape.width, tie_weights=True, embeddings_initializer=normal, name="wte"
    )
    x = PositionEmbedding(shape.context, shape.width, normal, name="wpe")(embedding(tokens))
    for index in range(shape.layers):
        x = _block(x, shape, seeds, index)
    x = keras.layers.LayerNormalization(epsilon=shape.layer_norm_epsilon, name="ln_f")(x)
    return keras.Model(tokens, embedding(x, reverse=True), name="gpt2")


def language_model_loss() -> keras.losses.Loss:
    """Cross-entropy over the vocabulary from the logits, averaged over every token of the batch."""
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True)
