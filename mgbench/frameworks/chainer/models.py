"""The catalogue architectures built from chainer.links, layer for layer as torchvision's.

Chainer ships no DenseNet, and its ResNet50Layers differs from torchvision's (a bias on the
first convolution, a fixed 7x7 final pooling, pretrained-weight plumbing), so both are built
here to torchvision's definitions: ResNet-50 v1.5 (stride in the 3x3 convolution of a
down-sampling bottleneck) and DenseNet-121 (growth 32, bottleneck width 4 x 32, compression
0.5). Parameter counts therefore equal torchvision's: 25,557,032 and, with the 14-output
CheXNet head, 6,968,206. Convolutions followed by batch-norm have no bias, as in torchvision.
Inception-v3 is not built for Chainer.
"""

from __future__ import annotations

from collections.abc import Callable

from mgbench.frameworks.chainer import compat as chainer_compat

chainer_compat.apply()

import chainer  # noqa: E402
import chainer.functions as F  # noqa: E402
import chainer.links as L  # noqa: E402

from mgbench.common.models import ModelSpec  # noqa: E402
from mgbench.frameworks.chainer.spec import CHAINER_MODELS  # noqa: E402

RESNET50_BLOCKS = (3, 4, 6, 3)
DENSENET121_BLOCKS = (6, 12, 24, 16)
DENSENET_GROWTH = 32
DENSENET_BOTTLENECK = 4


def conv_bn(in_channels: int, out_channels: int, ksize: int, stride: int = 1, pad: int = 0) -> chainer.Sequential:
    return chainer.Sequential(
        L.Convolution2D(in_channels, out_channels, ksize, stride, pad, nobias=True), L.BatchNormalization(out_channels)
    )


def global_average(h: chainer.Variable) -> chainer.Variable:
    return F.mean(h, axis=(2, 3))


class Bottleneck(chainer.Chain):
    """ResNet bottleneck 1x1 -> 3x3 (carries the stride) -> 1x1, with a projection where shapes change."""

    def __init__(self, in_channels: int, width: int, stride: int):
        super().__init__()
        out_channels = width * 4
        with self.init_scope():
            self.reduce = conv_bn(in_channels, width, 1)
            self.conv = conv_bn(width, width, 3, stride, 1)
            self.expand = conv_bn(width, out_channels, 1)
            self.projection = (
                conv_bn(in_channels, out_channels, 1, stride) if stride != 1 or in_channels != out_channels else None
            )

    def forward(self, x: chainer.Variable) -> chainer.Variable:
        h = F.relu(self.reduce(x))
        h = F.relu(self.conv(h))
        h = self.expand(h)
        shortcut = x if self.projection is None else self.projection(x)
        return F.relu(h + shortcut)


class ResNet50(chainer.Chain):
    def __init__(self, num_classes: int):
        super().__init__()
        with self.init_scope():
            self.stem = conv_bn(3, 64, 7, 2, 3)
            self.stages = chainer.ChainList()
            in_channels = 64
            for stage, blocks in enumerate(RESNET50_BLOCKS):
                width = 64 * 2**stage
                for block in range(blocks):
                    stride = 2 if stage > 0 and block == 0 else 1
                    self.stages.add_link(Bottleneck(in_channels, width, stride))
                    in_channels = width * 4
            self.fc = L.Linear(in_channels, num_classes)

    def forward(self, x: chainer.Variable) -> chainer.Variable:
        h = F.max_pooling_2d(F.relu(self.stem(x)), 3, 2, 1, cover_all=False)
        for block in self.stages:
            h = block(h)
        return self.fc(global_average(h))


class DenseLayer(chainer.Chain):
    """BN-ReLU-1x1 conv to 4 x growth channels, BN-ReLU-3x3 conv to growth channels, concatenated."""

    def __init__(self, in_channels: int):
        super().__init__()
        width = DENSENET_BOTTLENECK * DENSENET_GROWTH
        with self.init_scope():
            self.norm1 = L.BatchNormalization(in_channels)
            self.conv1 = L.Convolution2D(in_channels, width, 1, nobias=True)
            self.norm2 = L.BatchNormalization(width)
            self.conv2 = L.Convolution2D(width, DENSENET_GROWTH, 3, 1, 1, nobias=True)

    def forward(self, x: chainer.Variable) -> chainer.Variable:
        h = self.conv1(F.relu(self.norm1(x)))
        h = self.conv2(F.relu(self.norm2(h)))
        return F.concat((x, h), axis=1)


class Transition(chainer.Chain):
    """BN-ReLU-1x1 conv halving the channels, then 2x2 average pooling."""

    def __init__(self, in_channels: int):
        super().__init__()
        with self.init_scope():
            self.norm = L.BatchNormalization(in_channels)
            self.conv = L.Convolution2D(in_channels, in_channels // 2, 1, nobias=True)

    def forward(self, x: chainer.Variable) -> chainer.Variable:
        return F.average_pooling_2d(self.conv(F.relu(self.norm(x))), 2, 2)


class DenseNet121(chainer.Chain):
    def __init__(self, num_classes: int):
        super().__init__()
        with self.init_scope():
            self.stem = conv_bn(3, 64, 7, 2, 3)
            self.blocks = chainer.ChainList()
            channels = 64
            for index, layers in enumerate(DENSENET121_BLOCKS):
                for _ in range(layers):
                    self.blocks.add_link(DenseLayer(channels))
                    channels += DENSENET_GROWTH
                if index < len(DENSENET121_BLOCKS) - 1:
                    self.blocks.add_link(Transition(channels))
                    channels //= 2
            self.norm = L.BatchNormalization(channels)
            self.classifier = L.Linear(channels, num_classes)

    def forward(self, x: chainer.Variable) -> chainer.Variable:
        h = F.max_pooling_2d(F.relu(self.stem(x)), 3, 2, 1, cover_all=False)
        for block in self.blocks:
            h = block(h)
        return self.classifier(global_average(F.relu(self.norm(h))))


class Tiny(chainer.Chain):
    """The catalogue's `tiny`: conv-relu-maxpool-conv-relu-global average-linear, 5,418 parameters."""

    def __init__(self, num_classes: int):
        super().__init__()
        with self.init_scope():
            self.conv1 = L.Convolution2D(3, 16, 3, 1, 1)
            self.conv2 = L.Convolution2D(16, 32, 3, 1, 1)
            self.fc = L.Linear(32, num_classes)

    def forward(self, x: chainer.Variable) -> chainer.Variable:
        h = F.max_pooling_2d(F.relu(self.conv1(x)), 2, 2, cover_all=False)
        return self.fc(global_average(F.relu(self.conv2(h))))


densenet121, resnet50, tiny = DenseNet121, ResNet50, Tiny
"""The catalogue models `spec.py` declares (`CHAINER_MODELS`), each built by the callable of its
name from its number of outputs (initialisers draw from numpy's global RNG)."""


def build_model(spec: ModelSpec, image_size: int, data_format: str) -> chainer.Chain:
    """The architecture for `spec` (Chainer's nets take any image size, in channels_first only,
    which the registry holds them to)."""
    return CHAINER_MODELS.builder(spec.name, "chainer")(spec.num_classes)


def build_loss(spec: ModelSpec) -> Callable[[chainer.Variable, chainer.Variable], chainer.Variable]:
    """Mean softmax cross-entropy, or (CheXNet) sigmoid cross-entropy averaged over every output."""
    if spec.loss == "sigmoid":
        return lambda logits, targets: F.sigmoid_cross_entropy(logits, targets, normalize=True)
    return F.softmax_cross_entropy


def parameter_count(model: chainer.Link) -> int:
    return sum(param.size for param in model.params())
