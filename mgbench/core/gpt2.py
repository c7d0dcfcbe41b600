"""GPT-2's shape as data, declared once so that every framework builds the same language model,
and the reference draw of its initial weights reads it (`core.initial_weights.gpt2_reference_weights`).

The architecture is GPT-2's as nanoGPT writes it: token and learned position embeddings, pre-norm
blocks (layer norm, causal self-attention, layer norm, an MLP of 4x the width with GELU's tanh
approximation), a final layer norm, and the output projection tied to the token embedding (no
weights of its own). Every linear layer and layer norm has a bias, there is no dropout. The
vocabulary of 50,257 tokens is padded to a multiple of 64 (50,304): the padding rows are never a
target, and the matrix products of that width run faster.

The arrays (`GPT2.arrays`) are named and laid out as the PyTorch module names them (nanoGPT's
names without its `transformer.` prefix, linear weights out x in): that is the framework-neutral
layout the shared initial weights are kept in, as torchvision's is for the image models.

Each shape of `GPT2_SHAPES` is a catalogue model of its name (`core.models`), whose input is
tokens (`core.inputs.TokenInput`) and whose work per sample is `LanguageModelWork`. The PyTorch
(`frameworks/pytorch/gpt2.py`) and Keras (`frameworks/keras/gpt2.py`) builds read the shape.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

from mgbench.core.errors import UsageError
from mgbench.core.work import ModelWork, ReferenceCount, Work

GPT2_VOCABULARY = 50_257
"""GPT-2's BPE vocabulary: 50,000 merges, 256 bytes and `<|endoftext|>`."""
VOCABULARY_MULTIPLE = 64
"""The embedding's rows are padded to a multiple of this (nanoGPT's 50,304)."""
INIT_STD = 0.02
"""GPT-2's initialisation: every weight matrix and both embeddings normal with this deviation."""


@dataclass(frozen=True)
class Array:
    """One array of the model: `name` and `shape` as the PyTorch module holds it, and how GPT-2
    initialises it: normal(0, `std`), or filled with `fill` where `std` is None."""

    name: str
    shape: tuple[int, ...]
    std: float | None = None
    fill: float = 0.0

    @property
    def size(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True)
class GPT2:
    """A GPT-2 of `layers` blocks of `heads` attention heads over `width` features, attending
    over at most `context` tokens of a `vocabulary` (padded to `VOCABULARY_MULTIPLE`)."""

    layers: int
    heads: int
    width: int
    context: int
    vocabulary: int = GPT2_VOCABULARY
    layer_norm_epsilon: float = 1e-5

    def __post_init__(self) -> None:
        if self.width % self.heads:
            raise UsageError(f"GPT-2: a width of {self.width} does not split into {self.heads} heads")

    @property
    def padded_vocabulary(self) -> int:
        """The embedding's rows: the vocabulary rounded up to a multiple of `VOCABULARY_MULTIPLE`."""
        return -(-self.vocabulary // VOCABULARY_MULTIPLE) * VOCABULARY_MULTIPLE

    @property
    def head_width(self) -> int:
        return self.width // self.heads

    @property
    def mlp_width(self) -> int:
        return 4 * self.width

    @property
    def residual_std(self) -> float:
        """GPT-2 scales the initialisation of the two projections that write into the residual
        stream (attention's `c_proj`, the MLP's `c_proj`) by 1/sqrt(2 layers), so that the
        stream's variance does not grow with depth."""
        return INIT_STD / math.sqrt(2 * self.layers)

    def length_refusal(self, seq_len: int) -> str | None:
        """Why sequences of `seq_len` tokens cannot be fed to this model (None: they can): the
        position embedding has a row per position of the context, and no more."""
        if not 1 <= seq_len <= self.context:
            return f"GPT-2 attends over 1 to {self.context} tokens (its context), not {seq_len}"
        return None

    def arrays(self) -> Iterator[Array]:
        """Every array of the model, in the PyTorch module's order (its `state_dict`)."""
        width, residual = self.width, self.residual_std
        yield Array("wte.weight", (self.padded_vocabulary, width), INIT_STD)
        yield Array("wpe.weight", (self.context, width), INIT_STD)
        for index in range(self.layers):
            block = f"h.{index}"
            yield from _layer_norm(f"{block}.ln_1", width)
            yield from _linear(f"{block}.attn.c_attn", 3 * width, width, INIT_STD)
            yield from _linear(f"{block}.attn.c_proj", width, width, residual)
            yield from _layer_norm(f"{block}.ln_2", width)
            yield from _linear(f"{block}.mlp.c_fc", self.mlp_width, width, INIT_STD)
            yield from _linear(f"{block}.mlp.c_proj", width, self.mlp_width, residual)
        yield from _layer_norm("ln_f", width)

    def parameters(self, positions: bool = True) -> int:
        """Trainable parameters, the tied output projection counted once (it is the token
        embedding); without the position embedding (`positions=False`) they are the N of the
        FLOP count (`flops_per_token`)."""
        total = sum(array.size for array in self.arrays())
        return total if positions else total - self.context * self.width

    def flops_per_token(self, seq_len: int | None = None) -> int:
        """Training FLOPs (forward and backward, a multiply-add counted as 2) per token at
        `seq_len` tokens a sequence (default: the context): 6 N for the weights' matrix
        products, N without the position embedding (a lookup), plus 12 layers x width x
        seq_len for attention's scores and weighted sum (Kaplan et al.'s count, nanoGPT's and
        PaLM's model-FLOPs utilisation)."""
        tokens = self.context if seq_len is None else seq_len
        return 6 * self.parameters(positions=False) + 12 * self.layers * self.width * tokens


SAVED_PER_TOKEN_AND_WIDTH = 17
"""Elements a block's forward keeps for the backward, per token and per unit of width, where
attention's scores are recomputed (flash attention) instead of kept: Korthikanti et al.'s 34
bytes per token and width in 16-bit ("Reducing Activation Recomputation in Large Transformer
Models", 2022), dropout's masks left out, as GPT-2 here has no dropout."""


@dataclass(frozen=True)
class LanguageModelWork(Work):
    """A GPT-2's work per sample in closed form: `flops_per_token` times the sequence's tokens,
    and the elements its forward keeps, blocks and the logits (kept in float32 for the loss)."""

    shape: GPT2

    def per_sample(self, model: str, input_size: int, count: ReferenceCount) -> ModelWork:
        seq_len = input_size
        saved = seq_len * (SAVED_PER_TOKEN_AND_WIDTH * self.shape.layers * self.shape.width)
        saved += seq_len * self.shape.padded_vocabulary
        return ModelWork(
            flops_per_sample=self.shape.flops_per_token(seq_len) * seq_len, saved_elements_per_sample=saved
        )


def _linear(name: str, out_features: int, in_features: int, std: float) -> Iterator[Array]:
    yield Array(f"{name}.weight", (out_features, in_features), std)
    yield Array(f"{name}.bias", (out_features,))


def _layer_norm(name: str, width: int) -> Iterator[Array]:
    yield Array(f"{name}.weight", (width,), fill=1.0)
    yield Array(f"{name}.bias", (width,))


GPT2_SHAPES: dict[str, GPT2] = {
    "gpt2": GPT2(layers=12, heads=12, width=768, context=1024),
    "gpt2-medium": GPT2(layers=24, heads=16, width=1024, context=1024),
    "gpt2-xl": GPT2(layers=48, heads=25, width=1600, context=1024),
    "gpt2-tiny": GPT2(layers=2, heads=2, width=64, context=64, vocabulary=512),
}
"""GPT-2's published sizes (124M, 350M, 1.5B parameters), and a tiny one for tests on the CPU."""
