"""The catalogue architectures built from chainer.links, layer for layer as torchvision's.

Chainer ships no DenseNet, and its ResNet50Layers differs from torchvision's (a bias on the
first convolution, a fixed 7x7 final pooling, pretrained-weight plumbing), so both are built
here to torchvision's definitions, at the catalogue's shapes (`ModelSpec.convnet`): ResNet v1.5
(stride in the 3x3 convolution of a down-sampling bottleneck) and DenseNet (compression 0.5).
Parameter counts therefore equal torchvision's. Convolutions followed by batch-norm have no bias, as in torchvision.
ViT-B/16 is torchvision's `VisionTransformer` (`transformer`). Inception-v3 is not built for
Chainer.

Every link sits under the name torchvision gives the same module (`named.Named`, e.g. ResNet's
`layer1/0/conv1`, DenseNet's `features/denseblock1/denselayer1/norm1`, tiny's `0`, `3`, `7`),
so a parameter's path is its torchvision name with `/` for `.`: that is how the shared initial
weights find their links (`weights.load_initial`).
"""

from __future__ import annotations

from collections.abc import Callable

from mgbench.core.architectures import DenseNet, ResNet
from mgbench.core.models import ModelSpec
from mgbench.frameworks.chainer.imports import F, L, chainer
from mgbench.frameworks.chainer.named import Layer, Named, numbered
from mgbench.frameworks.chainer.spec import CHAINER_MODELS
from mgbench.frameworks.chainer.transformer import ViT


def convolution(in_channels: int, out_channels: int, ksize: int, stride: int = 1, pad: int = 0) -> L.Convolution2D:
    """A convolution followed by batch-norm, hence without bias."""
    return L.Convolution2D(in_channels, out_channels, ksize, stride, pad, nobias=True)


def stem_pool(h: chainer.Variable) -> chainer.Variable:
    """3x3 stride-2 max-pooling padded by 1 (with -inf, as torch pads), no partial windows."""
    return F.max_pooling_2d(h, 3, 2, 1, cover_all=False)


def halve(h: chainer.Variable) -> chainer.Variable:
    """2x2 stride-2 max-pooling."""
    return F.max_pooling_2d(h, 2, 2, cover_all=False)


def global_average_pool(h: chainer.Variable) -> chainer.Variable:
    return F.mean(h, axis=(2, 3), keepdims=True)


def flatten(h: chainer.Variable) -> chainer.Variable:
    return F.reshape(h, (h.shape[0], -1))


class Bottleneck(chainer.Chain):
    """ResNet bottleneck 1x1 -> 3x3 (carries the stride) -> 1x1 to `out_channels`, with a projection
    where shapes change."""

    def __init__(self, in_channels: int, width: int, out_channels: int, stride: int):
        super().__init__()
        with self.init_scope():
            self.conv1 = convolution(in_channels, width, 1)
            self.bn1 = L.BatchNormalization(width)
            self.conv2 = convolution(width, width, 3, stride, 1)
            self.bn2 = L.BatchNormalization(width)
            self.conv3 = convolution(width, out_channels, 1)
            self.bn3 = L.BatchNormalization(out_channels)
            self.downsample = (
                Named(numbered(convolution(in_channels, out_channels, 1, stride), L.BatchNormalization(out_channels)))
                if stride != 1 or in_channels != out_channels
                else None
            )

    def forward(self, x: chainer.Variable) -> chainer.Variable:
        h = F.relu(self.bn1(self.conv1(x)))
        h = F.relu(self.bn2(self.conv2(h)))
        h = self.bn3(self.conv3(h))
        shortcut = x if self.downsample is None else self.downsample(x)
        return F.relu(h + shortcut)


def resnet(shape: ResNet, num_classes: int) -> Named:
    """torchvision's `ResNet` of `shape`: stem, its stages of bottlenecks, global average, `fc`."""
    layers: list[tuple[str, Layer]] = [
        ("conv1", convolution(3, shape.stem_channels, 7, 2, 3)),
        ("bn1", L.BatchNormalization(shape.stem_channels)),
        ("relu", F.relu),
        ("maxpool", stem_pool),
    ]
    in_channels = shape.stem_channels
    for stage, blocks in enumerate(shape.stages, start=1):
        width = shape.width(stage)
        bottlenecks = []
        for block in range(blocks):
            stride = 2 if stage > 1 and block == 0 else 1
            bottlenecks.append(Bottleneck(in_channels, width, width * shape.expansion, stride))
            in_channels = width * shape.expansion
        layers.append((f"layer{stage}", Named(numbered(*bottlenecks))))
    layers += [("avgpool", global_average_pool), ("flatten", flatten), ("fc", L.Linear(in_channels, num_classes))]
    return Named(layers)


def resnet50(spec: ModelSpec, image_size: int) -> Named:
    return resnet(spec.convnet, spec.num_classes)


class DenseLayer(chainer.Chain):
    """BN-ReLU-1x1 conv to the bottleneck width, BN-ReLU-3x3 conv to the growth, concatenated."""

    def __init__(self, in_channels: int, shape: DenseNet):
        super().__init__()
        width = shape.bottleneck_width
        with self.init_scope():
            self.norm1 = L.BatchNormalization(in_channels)
            self.conv1 = convolution(in_channels, width, 1)
            self.norm2 = L.BatchNormalization(width)
            self.conv2 = convolution(width, shape.growth, 3, 1, 1)

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
            self.conv = convolution(in_channels, in_channels // 2, 1)

    def forward(self, x: chainer.Variable) -> chainer.Variable:
        return F.average_pooling_2d(self.conv(F.relu(self.norm(x))), 2, 2)


def densenet(shape: DenseNet, num_classes: int) -> Named:
    """torchvision's `DenseNet` of `shape`: `features` (stem, dense blocks and transitions,
    `norm5`), then ReLU, global average and `classifier`."""
    features: list[tuple[str, Layer]] = [
        ("conv0", convolution(3, shape.stem_channels, 7, 2, 3)),
        ("norm0", L.BatchNormalization(shape.stem_channels)),
        ("relu0", F.relu),
        ("pool0", stem_pool),
    ]
    channels = shape.stem_channels
    for block, layers in enumerate(shape.blocks, start=1):
        dense_layers = []
        for layer in range(1, layers + 1):
            dense_layers.append((f"denselayer{layer}", DenseLayer(channels, shape)))
            channels += shape.growth
        features.append((f"denseblock{block}", Named(dense_layers)))
        if block < len(shape.blocks):
            features.append((f"transition{block}", Transition(channels)))
            channels //= 2
    features.append(("norm5", L.BatchNormalization(channels)))
    return Named(
        [
            ("features", Named(features)),
            ("relu", F.relu),
            ("avgpool", global_average_pool),
            ("flatten", flatten),
            ("classifier", L.Linear(channels, num_classes)),
        ]
    )


def densenet121(spec: ModelSpec, image_size: int) -> Named:
    return densenet(spec.convnet, spec.num_classes)


def tiny(spec: ModelSpec, image_size: int) -> Named:
    """The catalogue's `tiny` (`SmallConvNet`): conv-relu-maxpool-conv-relu-global average-linear,
    numbered as torch's `nn.Sequential` of it (convolutions 0 and 3, linear 7)."""
    first, second = spec.convnet.channels
    return Named(
        numbered(
            L.Convolution2D(3, first, 3, 1, 1),
            F.relu,
            halve,
            L.Convolution2D(first, second, 3, 1, 1),
            F.relu,
            global_average_pool,
            flatten,
            L.Linear(second, spec.num_classes),
        )
    )


def vit_b_16(spec: ModelSpec, image_size: int) -> ViT:
    """torchvision's ViT-B/16 at the catalogue's shape, its position embedding sized for `image_size` px."""
    return ViT(spec.transformer, image_size, spec.num_classes)


def build_model(spec: ModelSpec, image_size: int, data_format: str) -> chainer.Chain:
    """The architecture for `spec`, built by this module's function of its name (`CHAINER_MODELS`)
    from its number of outputs; initialisers draw from numpy's global RNG. Chainer's nets take any
    image size, in channels_first only, which the registry holds them to."""
    return CHAINER_MODELS.builder(spec.name, "chainer")(spec, image_size)


LOSSES: dict[str, Callable[[chainer.Variable, chainer.Variable], chainer.Variable]] = {
    "sigmoid": lambda logits, targets: F.sigmoid_cross_entropy(logits, targets, normalize=True),
    "softmax": F.softmax_cross_entropy,
}
"""Chainer's loss for each declared loss kind (`core.objective.LossKind`)."""


def build_loss(spec: ModelSpec) -> Callable[[chainer.Variable, chainer.Variable], chainer.Variable]:
    """Mean softmax cross-entropy, or (CheXNet) sigmoid cross-entropy averaged over every output
    (`LOSSES`, by the declared loss kind)."""
    return LOSSES[spec.objective.loss]


def parameter_count(model: chainer.Link) -> int:
    return sum(param.size for param in model.params())
