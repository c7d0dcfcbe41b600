"""torchvision's `VisionTransformer` built from chainer links and functions, its modules named
as torchvision names them (`named.Named`): a parameter's path, `/` read as `.`, is its
torchvision name, which is how the shared initial weights find it (`weights.load_initial`).
The parameters a torch module holds itself (the class token, the position embedding,
attention's stacked input projection) are `chainer.Parameter`s of the chain standing for that
module, under the same names.

Tokens travel as (batch, tokens, width). Chainer's layer norm takes 2-D input only, so it and
the MLP see the tokens as rows of a matrix (`over_tokens`). Chainer 7.8.1 has no GELU: the
exact (erf) form torch's `nn.GELU()` computes is written out. Dropout is 0 in torchvision's
ViT-B/16 and is left out."""

from __future__ import annotations

import math
from collections.abc import Callable

from mgbench.core.architectures import VisionTransformer
from mgbench.frameworks.chainer.attention import attend
from mgbench.frameworks.chainer.imports import F, L, chainer
from mgbench.frameworks.chainer.imports import initializers as I
from mgbench.frameworks.chainer.named import Named

POSITION_EMBEDDING_STD = 0.02
"""torchvision's draw of the position embedding (the shared start replaces it under `--init same`)."""


def gelu(x: chainer.Variable) -> chainer.Variable:
    """x * Phi(x), with the normal distribution function from erf: torch's exact GELU, not the
    tanh approximation, whose outputs differ by more than the same-start tolerance."""
    return 0.5 * x * (1.0 + F.erf(x * (1.0 / math.sqrt(2.0))))


def over_tokens(layer: Callable[[chainer.Variable], chainer.Variable], x: chainer.Variable) -> chainer.Variable:
    """`layer`, which takes a matrix of rows, applied to every token of (batch, tokens, width) `x`."""
    batch, tokens, width = x.shape
    return F.reshape(layer(F.reshape(x, (batch * tokens, width))), (batch, tokens, -1))


class SelfAttention(chainer.Chain):
    """torch's `nn.MultiheadAttention` as torchvision's encoder block calls it (query, key and
    value the same tokens, no mask, no dropout): one input projection stacking the query's, key's
    and value's in that order (`in_proj_weight`, out x in, and `in_proj_bias`), `heads` heads of
    equal width, then `out_proj`."""

    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        with self.init_scope():
            self.in_proj_weight = chainer.Parameter(I.GlorotUniform(), (3 * width, width))
            self.in_proj_bias = chainer.Parameter(I.Zero(), (3 * width,))
            self.out_proj = L.Linear(width, width)

    def forward(self, x: chainer.Variable) -> chainer.Variable:
        batch, tokens, width = x.shape
        head_width = width // self.heads
        stacked = F.linear(x, self.in_proj_weight, self.in_proj_bias, n_batch_axes=2)
        by_head = F.reshape(stacked, (batch, tokens, 3, self.heads, head_width))
        query, key, value = F.separate(F.transpose(by_head, (2, 0, 3, 1, 4)), axis=0)
        attended = attend(query, key, value, 1.0 / math.sqrt(head_width))
        merged = F.reshape(F.transpose(attended, (0, 2, 1, 3)), (batch, tokens, width))
        return self.out_proj(merged, n_batch_axes=2)


class EncoderBlock(chainer.Chain):
    """A pre-norm block: x + attention(ln_1(x)), then that + mlp(ln_2(that)), the MLP numbered
    as torchvision's `MLPBlock` (linear 0, GELU 1, linear 3; its dropouts 2 and 4 are 0)."""

    def __init__(self, shape: VisionTransformer):
        super().__init__()
        with self.init_scope():
            self.ln_1 = L.LayerNormalization(shape.width, shape.layer_norm_epsilon)
            self.self_attention = SelfAttention(shape.width, shape.heads)
            self.ln_2 = L.LayerNormalization(shape.width, shape.layer_norm_epsilon)
            self.mlp = Named(
                [
                    ("0", L.Linear(shape.width, shape.mlp_width)),
                    ("1", gelu),
                    ("3", L.Linear(shape.mlp_width, shape.width)),
                ]
            )

    def forward(self, x: chainer.Variable) -> chainer.Variable:
        x = x + self.self_attention(over_tokens(self.ln_1, x))
        return x + over_tokens(lambda rows: self.mlp(self.ln_2(rows)), x)


class Encoder(chainer.Chain):
    """The learned position embedding (a row per token of `tokens`), the blocks
    (`encoder_layer_0`...), a final layer norm."""

    def __init__(self, shape: VisionTransformer, tokens: int):
        super().__init__()
        with self.init_scope():
            self.pos_embedding = chainer.Parameter(I.Normal(POSITION_EMBEDDING_STD), (1, tokens, shape.width))
            self.layers = Named((f"encoder_layer_{index}", EncoderBlock(shape)) for index in range(shape.layers))
            self.ln = L.LayerNormalization(shape.width, shape.layer_norm_epsilon)

    def forward(self, x: chainer.Variable) -> chainer.Variable:
        x = x + F.broadcast_to(self.pos_embedding, x.shape)
        return over_tokens(self.ln, self.layers(x))


class ViT(chainer.Chain):
    """Patches embedded by a convolution whose kernel and stride are the patch size, taken in
    row-major order as tokens after the class token; the encoder; the head on the class token."""

    def __init__(self, shape: VisionTransformer, image_size: int, classes: int):
        super().__init__()
        with self.init_scope():
            self.class_token = chainer.Parameter(I.Zero(), (1, 1, shape.width))
            self.conv_proj = L.Convolution2D(3, shape.width, shape.patch_size, shape.patch_size)
            self.encoder = Encoder(shape, shape.tokens(image_size))
            self.heads = Named([("head", L.Linear(shape.width, classes))])

    def forward(self, images: chainer.Variable) -> chainer.Variable:
        patches = self.conv_proj(images)
        batch, width = patches.shape[:2]
        tokens = F.transpose(F.reshape(patches, (batch, width, -1)), (0, 2, 1))
        class_token = F.broadcast_to(self.class_token, (batch, 1, width))
        encoded = self.encoder(F.concat((class_token, tokens), axis=1))
        return self.heads(encoded[:, 0])
