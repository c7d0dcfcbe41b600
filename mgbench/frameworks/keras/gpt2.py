"""GPT-2 in Keras 3 at a shape of `core.gpt2` (`GPT2_SHAPES`), for every Keras backend: the same
architecture as the PyTorch build (`frameworks/pytorch/gpt2.py`), in keras.ops only.

The token embedding is a `ReversibleEmbedding` called twice: forward on the tokens, and in reverse
(its matrix transposed) as the output projection, so the two are one variable as in PyTorch.
Attention is `transformer.attend(is_causal=True)`, ViT's call masked causally, leaving flash to
Keras (`flash_attention=None`), so each backend's attention probe sizes the call GPT-2 makes. Each layer that holds weights is
named after the PyTorch module holding them, "_" for "." (`keras_name`), and `weights.load_initial`
maps the shared start onto them by those names (`torch_module`), as it does an image model's.

`models.gpt2` builds every GPT-2 size of the catalogue through `build_gpt2`.
"""

from __future__ import annotations

import re
from typing import Any

import keras

from mgbench.core.errors import UsageError
from mgbench.core.gpt2 import GPT2, INIT_STD
from mgbench.frameworks.keras.transformer import attend


def keras_name(module: str) -> str:
    """The Keras layer for the PyTorch module `module` (Keras over PyTorch registers variables
    under their layers' paths, where torch refuses a ".")."""
    return module.replace(".", "_")


BLOCK_PARTS = ("ln_1", "attn", "ln_2", "mlp.c_fc", "mlp.c_proj")
"""The modules of a PyTorch block that hold weights: the Keras block has a layer for each
(attention's two projections are one layer, `attn`)."""
OUTSIDE_BLOCKS = ("wte", "wpe", "ln_f")
"""The PyTorch modules with weights outside the blocks, named alike in Keras."""
BLOCK_LAYER = re.compile(r"h_(\d+)_(\w+)")


def torch_module(layer: str) -> str:
    """The PyTorch module the Keras layer `layer` is named after (`keras_name` undone part by part:
    the modules' own names hold "_")."""
    if layer in OUTSIDE_BLOCKS:
        return layer
    parts = {keras_name(part): part for part in BLOCK_PARTS}
    if (match := BLOCK_LAYER.fullmatch(layer)) and match.group(2) in parts:
        return f"h.{match.group(1)}.{parts[match.group(2)]}"
    raise UsageError(f"the Keras GPT-2 has a layer {layer!r} that PyTorch's has not")


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
        attended = attend(query, key, value, is_causal=True)
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


def build_gpt2(shape: GPT2, seed: int | None, seq_len: int | None = None) -> keras.Model:
    """GPT-2 at `shape` for sequences of `seq_len` tokens (default: the context): (batch,
    seq_len) int32 tokens in, (batch, seq_len, padded vocabulary) logits out. Initialised as
    GPT-2 is by Keras' generator seeded with `seed` (None: from Keras' global seed,
    `keras.utils.set_random_seed`); `--init same` loads the shared draw instead
    (`weights.load_initial`)."""
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


class NextTokenCrossentropy(keras.losses.Loss):
    """A language model's loss: cross-entropy of the next token from the logits over the (padded)
    vocabulary, each sequence's the mean over its tokens. Reduced over the batch as Keras' losses
    are (`sum_over_batch_size`: the mean), that is the mean over every token of the batch, as
    PyTorch's `language_model_loss`; and a loop that sums per-sample losses over the global batch
    (`tf.nn.compute_average_loss`, the tensorflow loop) gets the same mean. In float32 whatever the
    logits' dtype, as every Keras loss casts its inputs."""

    def __init__(self, from_logits: bool = True, reduction: str = "sum_over_batch_size"):
        if not from_logits:
            raise ValueError("the Keras models emit logits: a next-token loss takes them")
        super().__init__(reduction=reduction, name="next_token_crossentropy")

    def call(self, targets: Any, logits: Any) -> Any:
        tokens = keras.losses.sparse_categorical_crossentropy(targets, logits, from_logits=True)
        return keras.ops.mean(tokens, axis=-1)


def language_model_loss() -> keras.losses.Loss:
    """Cross-entropy over the vocabulary from the logits, averaged over every token of the batch."""
    return NextTokenCrossentropy()
