"""GPT-2 in PyTorch, nanoGPT's way, at a shape of `core.gpt2` (`GPT2_SHAPES`): tokens in, logits
over the padded vocabulary out, and its loss.

Attention is `scaled_dot_product_attention(is_causal=True)`, which picks its kernel per call
(flash on a GPU in half precision; `attention.reached_backend` observes which). The output
projection is the token embedding's matrix itself (`F.linear` on `wte.weight`), so the model holds
no second copy and its `state_dict` has exactly the arrays `GPT2.arrays` declares, in their names
and layouts: the shared start (`core.initial_weights.gpt2_reference_weights`) loads through `weights.load_initial` as an
image model's does.

Every GPT-2 size of the catalogue is built from here by `models.gpt2`, the builder of their family.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from mgbench.core.errors import UsageError
from mgbench.core.gpt2 import GPT2


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention: one fused q,k,v projection (`c_attn`, q, k and v stacked
    along its outputs), then the output projection (`c_proj`)."""

    def __init__(self, shape: GPT2):
        super().__init__()
        self.heads = shape.heads
        self.c_attn = nn.Linear(shape.width, 3 * shape.width)
        self.c_proj = nn.Linear(shape.width, shape.width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, tokens, width = x.shape
        split = (batch, tokens, self.heads, width // self.heads)
        query, key, value = (part.view(split).transpose(1, 2) for part in self.c_attn(x).split(width, dim=2))
        attended = F.scaled_dot_product_attention(query, key, value, is_causal=True)
        return self.c_proj(attended.transpose(1, 2).reshape(batch, tokens, width))


class MLP(nn.Module):
    """4x wider, GELU's tanh approximation (GPT-2's), back to the width."""

    def __init__(self, shape: GPT2):
        super().__init__()
        self.c_fc = nn.Linear(shape.width, shape.mlp_width)
        self.c_proj = nn.Linear(shape.mlp_width, shape.width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    """Pre-norm: x + attn(ln_1(x)), then + mlp(ln_2(x))."""

    def __init__(self, shape: GPT2):
        super().__init__()
        self.ln_1 = nn.LayerNorm(shape.width, eps=shape.layer_norm_epsilon)
        self.attn = CausalSelfAttention(shape)
        self.ln_2 = nn.LayerNorm(shape.width, eps=shape.layer_norm_epsilon)
        self.mlp = MLP(shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2LM(nn.Module):
    """GPT-2 at `shape`: (batch, tokens) int64 in, (batch, tokens, padded vocabulary) logits out,
    the logit at each position depending on the tokens up to it only. Built with torch's default
    initialisation; `initialise` gives it GPT-2's."""

    def __init__(self, shape: GPT2):
        super().__init__()
        self.shape = shape
        self.wte = nn.Embedding(shape.padded_vocabulary, shape.width)
        self.wpe = nn.Embedding(shape.context, shape.width)
        self.h = nn.ModuleList(Block(shape) for _ in range(shape.layers))
        self.ln_f = nn.LayerNorm(shape.width, eps=shape.layer_norm_epsilon)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        if refusal := self.shape.length_refusal(tokens.shape[1]):
            raise UsageError(refusal)
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.wte(tokens) + self.wpe(positions)
        for block in self.h:
            x = block(x)
        return F.linear(self.ln_f(x), self.wte.weight)

    def shard_units(self) -> nn.ModuleList:
        """What a sharding strategy gathers one at a time (`strategies.shard_units`): the blocks,
        which the forward runs in turn; the embeddings and the last norm stay with the root."""
        return self.h

    @torch.no_grad()
    def initialise(self, seed: int) -> None:
        """GPT-2's initialisation as `GPT2.arrays` declares it (normal weights, the residual
        projections' scaled, zero biases, layer norms at 1), drawn by torch's generator seeded
        with `seed` on the model's device: the same weights every time for one seed and device.
        (`--init same` loads the numpy draw of `core.initial_weights.gpt2_reference_weights` instead, the same in every
        framework.)"""
        parameters = dict(self.named_parameters())
        generator = torch.Generator(device=self.wte.weight.device).manual_seed(seed)
        for array in self.shape.arrays():
            parameter = parameters[array.name]
            if array.std is None:
                parameter.fill_(array.fill)
            else:
                parameter.normal_(0.0, array.std, generator=generator)


def build_gpt2(shape: GPT2, seed: int, device: torch.device | str = "cpu") -> GPT2LM:
    """GPT-2 at `shape` on `device`, initialised as GPT-2 is, from `seed`."""
    model = GPT2LM(shape).to(device)
    model.initialise(seed)
    return model


def language_model_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Cross-entropy over the vocabulary, averaged over every token of the batch, in float32
    whatever the logits' dtype (as the image models' losses take `.float()` logits)."""
    return F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten().long())
