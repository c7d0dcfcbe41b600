"""The catalogue's network shapes as data, declared once on each `ModelSpec` and read by every
framework's builder and by the reference draw of the initial weights.

A convolutional network lists its weighted layers (`layers`) as torchvision names and shapes
them, in torchvision's order: the shared initial weights are drawn layer by layer from that list
(`initial_weights.reference_weights`), and the model's reference parameter and tensor counts
are derived from it (`counts`). Each shape also says how torchvision initialises its
convolutions, which the reference draw follows. A vision transformer's shape is
`VisionTransformer`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import ClassVar, Literal

Fan = Literal["fan_in", "fan_out"]


@dataclass(frozen=True)
class Layer:
    """One weighted layer of a reference architecture: `name` is torchvision's module path, `kind`
    conv, bn or linear; `shape` the weight's shape (bn: channels,)."""

    name: str
    kind: str
    shape: tuple[int, ...]
    bias: bool = False

    @property
    def counts(self) -> tuple[int, int]:
        """Its trainable parameters and tensors: a batch-norm's scale and shift, else the weight
        and its bias."""
        if self.kind == "bn":
            return 2 * self.shape[0], 2
        return math.prod(self.shape) + (self.shape[0] if self.bias else 0), 1 + self.bias


def conv(name: str, out_channels: int, in_channels: int, kernel: int, bias: bool = False) -> Layer:
    return Layer(name, "conv", (out_channels, in_channels, kernel, kernel), bias)


def bn(name: str, channels: int) -> Layer:
    return Layer(name, "bn", (channels,))


def linear(name: str, out_features: int, in_features: int) -> Layer:
    return Layer(name, "linear", (out_features, in_features), bias=True)


def counts(layers: Iterable[Layer]) -> tuple[int, int]:
    """Trainable parameters and tensors of `layers`."""
    parameters, tensors = zip(*(layer.counts for layer in layers), strict=True)
    return sum(parameters), sum(tensors)


@dataclass(frozen=True)
class ResNet:
    """torchvision's ResNet of bottleneck blocks, v1.5 (the stride in a block's 3x3 convolution):
    a 7x7/2 stem of `stem_channels`, 3x3/2 max-pool, then per stage its number of bottlenecks
    (1x1, 3x3, 1x1 expanding by `expansion`), the first of each projecting its input, each
    stage twice as wide as the one before; global average, `fc`."""

    stages: tuple[int, ...]
    stem_channels: int = 64
    expansion: int = 4
    conv_fan: ClassVar[Fan | None] = "fan_out"
    """torchvision draws its convolutions He-normal over their fan-out."""
    zero_head_bias: ClassVar[bool] = False

    def width(self, stage: int) -> int:
        """The bottleneck width of `stage` (from 1); its blocks put out `expansion` times that."""
        return self.stem_channels * 2 ** (stage - 1)

    def layers(self, num_classes: int) -> Iterator[Layer]:
        yield conv("conv1", self.stem_channels, 3, 7)
        yield bn("bn1", self.stem_channels)
        in_channels = self.stem_channels
        for stage, blocks in enumerate(self.stages, start=1):
            width, out_channels = self.width(stage), self.width(stage) * self.expansion
            for block in range(blocks):
                prefix = f"layer{stage}.{block}"
                yield conv(f"{prefix}.conv1", width, in_channels, 1)
                yield bn(f"{prefix}.bn1", width)
                yield conv(f"{prefix}.conv2", width, width, 3)
                yield bn(f"{prefix}.bn2", width)
                yield conv(f"{prefix}.conv3", out_channels, width, 1)
                yield bn(f"{prefix}.bn3", out_channels)
                if block == 0:
                    yield conv(f"{prefix}.downsample.0", out_channels, in_channels, 1)
                    yield bn(f"{prefix}.downsample.1", out_channels)
                in_channels = out_channels
        yield linear("fc", num_classes, in_channels)


@dataclass(frozen=True)
class DenseNet:
    """torchvision's DenseNet: a 7x7/2 stem of `stem_channels`, 3x3/2 max-pool, dense blocks of
    `blocks` layers each (BN-ReLU-1x1 to `bottleneck` x `growth`, BN-ReLU-3x3 to `growth`,
    appended to the layer's input), a transition halving the channels between blocks, a final
    batch-norm, global average, `classifier`."""

    blocks: tuple[int, ...]
    growth: int = 32
    bottleneck: int = 4
    stem_channels: int = 64
    conv_fan: ClassVar[Fan | None] = "fan_in"
    """torchvision draws its convolutions He-normal over their fan-in..."""
    zero_head_bias: ClassVar[bool] = True
    """...and its classifier's bias zero."""

    @property
    def bottleneck_width(self) -> int:
        return self.bottleneck * self.growth

    def layers(self, num_classes: int) -> Iterator[Layer]:
        yield conv("features.conv0", self.stem_channels, 3, 7)
        yield bn("features.norm0", self.stem_channels)
        channels = self.stem_channels
        for block, depth in enumerate(self.blocks, start=1):
            for layer in range(1, depth + 1):
                prefix = f"features.denseblock{block}.denselayer{layer}"
                yield bn(f"{prefix}.norm1", channels)
                yield conv(f"{prefix}.conv1", self.bottleneck_width, channels, 1)
                yield bn(f"{prefix}.norm2", self.bottleneck_width)
                yield conv(f"{prefix}.conv2", self.growth, self.bottleneck_width, 3)
                channels += self.growth
            if block < len(self.blocks):
                yield bn(f"features.transition{block}.norm", channels)
                yield conv(f"features.transition{block}.conv", channels // 2, channels, 1)
                channels //= 2
        yield bn("features.norm5", channels)
        yield linear("classifier", num_classes, channels)


@dataclass(frozen=True)
class SmallConvNet:
    """Two 3x3 convolutions with biases (ReLU, a 2x2 max-pool between them), global average and a
    linear head, no batch-norm; its layers numbered as torch's `nn.Sequential` of it numbers
    them (convolutions 0 and 3, linear 7)."""

    channels: tuple[int, int] = (16, 32)
    conv_fan: ClassVar[Fan | None] = None
    """torch's default initialisation throughout."""
    zero_head_bias: ClassVar[bool] = False

    def layers(self, num_classes: int) -> Iterator[Layer]:
        first, second = self.channels
        yield conv("0", first, 3, 3, bias=True)
        yield conv("3", second, first, 3, bias=True)
        yield linear("7", num_classes, second)


ConvNet = ResNet | DenseNet | SmallConvNet


@dataclass(frozen=True)
class VisionTransformer:
    """The shape of a vision transformer, declared once so that every framework builds the same
    one (torchvision's `VisionTransformer`: pre-norm encoder blocks, a class token, a learned
    position embedding, layer-norm epsilon 1e-6, exact GELU, no dropout)."""

    patch_size: int
    layers: int
    width: int
    heads: int
    mlp_width: int
    layer_norm_epsilon: float = 1e-6

    @property
    def head_width(self) -> int:
        """The width of each attention head's queries, keys and values."""
        return self.width // self.heads

    def tokens(self, image_size: int) -> int:
        """The sequence one image becomes: a token per patch, plus the class token."""
        return (image_size // self.patch_size) ** 2 + 1

    def size_refusal(self, image_size: int) -> str | None:
        """Why an image of `image_size` px cannot be cut into this transformer's patches (None: it can)."""
        if image_size % self.patch_size:
            return f"cuts images into {self.patch_size}-px patches: the image size must be a multiple of {self.patch_size}, not {image_size}"
        return None
