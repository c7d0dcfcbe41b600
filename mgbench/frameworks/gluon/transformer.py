"""torchvision's `VisionTransformer` built from `gluon.nn` blocks at the catalogue's shape
(`ModelSpec.transformer`), each child named as torchvision names its module, so a parameter's
path in the net is its name in the shared initial weights (`weights.load_initial`).

MXNet 1.9 has no attention block in `gluon.nn`; its contrib's fused self-attention operators
(`interleaved_matmul_selfatt_*`) want the query, key and value projections interleaved head by
head, where torch's `in_proj_weight` stacks all of q, then k, then v. So the attention here is
MXNet's own operators on torch's layout: one projection to q, k and v, the heads folded into the
batch, `batch_dot` of queries and keys, `softmax`, `batch_dot` with the values.
"""

from __future__ import annotations

import math

import mxnet as mx
from mxnet import gluon
from mxnet.gluon import nn

from mgbench.core.architectures import VisionTransformer as Shape
from mgbench.core.models import ModelSpec
from mgbench.frameworks.gluon.architectures import NamedSequential

POSITION_STD = 0.02
"""torchvision's draw of the position embedding (the framework's own start, `--init framework`)."""


def layer_norm(shape: Shape) -> nn.LayerNorm:
    return nn.LayerNorm(axis=-1, epsilon=shape.layer_norm_epsilon, in_channels=shape.width)


def token_dense(units: int, in_units: int) -> nn.Dense:
    """A linear layer applied to every token of a (batch, tokens, width) input."""
    return nn.Dense(units, flatten=False, in_units=in_units)


class SelfAttention(nn.HybridBlock):
    """torch's `nn.MultiheadAttention` as torchvision's encoder calls it (self-attention, no mask,
    no dropout): `in_proj_weight` (3 x width, width) stacking q, k, v, and `out_proj`."""

    OPERATORS = ("batch_dot", "softmax", "batch_dot")
    """The MXNet operators `hybrid_forward` computes attention with, in order: scores, weights, output."""
    KERNEL = f"MXNet {', '.join(OPERATORS)} (unfused; the heads folded into the batch)"
    """How a run's row names them."""

    def __init__(self, shape: Shape):
        super().__init__()
        self.width, self.heads = shape.width, shape.heads
        self.scale = 1.0 / math.sqrt(shape.head_width)
        self.in_proj_weight = self.params.get("in_proj_weight", shape=(3 * shape.width, shape.width))
        self.in_proj_bias = self.params.get("in_proj_bias", shape=(3 * shape.width,), init=mx.init.Zero())
        self.out_proj = token_dense(shape.width, shape.width)

    def _split_heads(self, F, x):
        """(batch, tokens, width) -> (batch x heads, tokens, head width)."""
        x = F.transpose(F.reshape(x, (0, 0, -4, self.heads, -1)), axes=(0, 2, 1, 3))
        return F.reshape(x, (-3, 0, 0))

    def _merge_heads(self, F, x):
        """(batch x heads, tokens, head width) -> (batch, tokens, width), heads in torch's order."""
        x = F.transpose(F.reshape(x, (-4, -1, self.heads, 0, 0)), axes=(0, 2, 1, 3))
        return F.reshape(x, (0, 0, -3))

    def hybrid_forward(self, F, x, in_proj_weight, in_proj_bias):
        projected = F.FullyConnected(x, in_proj_weight, in_proj_bias, num_hidden=3 * self.width, flatten=False)
        query, key, value = (self._split_heads(F, part) for part in F.split(projected, num_outputs=3, axis=-1))
        scores = F.batch_dot(query, key, transpose_b=True) * self.scale
        return self.out_proj(self._merge_heads(F, F.batch_dot(F.softmax(scores, axis=-1), value)))


class EncoderBlock(nn.HybridBlock):
    """torchvision's `EncoderBlock`: pre-norm attention and MLP (Linear, exact GELU, Linear), each
    added to its input. The MLP's layers keep `nn.Sequential`'s indices (0 and 3: dropouts at 2
    and 4 drop nothing here)."""

    def __init__(self, shape: Shape):
        super().__init__()
        self.ln_1 = layer_norm(shape)
        self.self_attention = SelfAttention(shape)
        self.ln_2 = layer_norm(shape)
        self.mlp = NamedSequential(
            **{
                "0": token_dense(shape.mlp_width, shape.width),
                "1": nn.GELU(),
                "3": token_dense(shape.width, shape.mlp_width),
            }
        )

    def hybrid_forward(self, F, x):
        x = x + self.self_attention(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class Encoder(nn.HybridBlock):
    """torchvision's `Encoder`: the position embedding added, the blocks (`encoder_layer_i`), `ln`."""

    def __init__(self, shape: Shape, tokens: int):
        super().__init__()
        self.pos_embedding = self.params.get(
            "pos_embedding", shape=(1, tokens, shape.width), init=mx.init.Normal(POSITION_STD)
        )
        self.layers = NamedSequential(**{f"encoder_layer_{i}": EncoderBlock(shape) for i in range(shape.layers)})
        self.ln = layer_norm(shape)

    def hybrid_forward(self, F, x, pos_embedding):
        return self.ln(self.layers(F.broadcast_add(x, pos_embedding)))


class VisionTransformer(nn.HybridBlock):
    """torchvision's `VisionTransformer`: `conv_proj` cuts the image into patch tokens (row-major,
    as torch flattens them), `class_token` is put first, `encoder`, then `heads.head` on that token."""

    def __init__(self, shape: Shape, image_size: int, num_classes: int):
        super().__init__()
        self.conv_proj = nn.Conv2D(shape.width, shape.patch_size, shape.patch_size, in_channels=3)
        self.class_token = self.params.get("class_token", shape=(1, 1, shape.width), init=mx.init.Zero())
        self.encoder = Encoder(shape, shape.tokens(image_size))
        self.heads = NamedSequential(head=nn.Dense(num_classes, in_units=shape.width))

    def hybrid_forward(self, F, x, class_token):
        patches = F.transpose(F.reshape(self.conv_proj(x), (0, 0, -1)), axes=(0, 2, 1))
        classes = F.broadcast_like(class_token, patches, lhs_axes=(0,), rhs_axes=(0,))
        encoded = self.encoder(F.concat(classes, patches, dim=1))
        return self.heads(F.reshape(F.slice_axis(encoded, axis=1, begin=0, end=1), (0, -1)))


def vision_transformer(spec: ModelSpec, image_size: int) -> VisionTransformer:
    """`spec`'s transformer at `image_size` px (the position embedding has a row per token)."""
    assert spec.transformer is not None, f"{spec.name} is not a transformer"
    return VisionTransformer(spec.transformer, image_size, spec.num_classes)


def attention_kernel(net: gluon.Block) -> str | None:
    """The operators `net`'s attention runs in, read off the attention blocks it was built with
    (None: it has none), so a row names what computed its steps."""
    kernels: set[str] = set()

    def collect(block: gluon.Block) -> None:
        if isinstance(block, SelfAttention):
            kernels.add(block.KERNEL)

    net.apply(collect)
    return kernels.pop() if kernels else None
