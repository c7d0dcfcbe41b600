"""torchvision's ResNet (v1.5) and DenseNet built from `gluon.nn` layers to the catalogue's shapes
(`architectures.ResNet`, `architectures.DenseNet`), each child named as torchvision names its module, so a layer's path in the net is its name in the shared initial
weights (`weights.load_initial`).

The model zoo's ResNet-50 v1 strides in the first 1x1 convolution of a down-sampling block and
gives its convolutions biases; torchvision's (v1.5) strides in the 3x3 and has none. The zoo's
DenseNet-121 is torchvision's architecture, but its children are numbered, not named. Every layer
is given its input width, so no parameter shape is deferred to a first forward.
"""

from __future__ import annotations

from mxnet.gluon import nn

from mgbench.core.architectures import DenseNet, ResNet


class NamedSequential(nn.HybridBlock):
    """`HybridSequential` whose children keep the names given (torchvision's `nn.Sequential`
    with an `OrderedDict`), run in that order."""

    def __init__(self, **children: nn.HybridBlock):
        super().__init__()
        for name, child in children.items():
            self.register_child(child, name)

    def hybrid_forward(self, F, x):
        for child in self._children.values():
            x = child(x)
        return x


def conv(out_channels: int, in_channels: int, kernel: int, stride: int = 1) -> nn.Conv2D:
    """A convolution padded as torch pads it (kernel // 2 on every side), without bias."""
    return nn.Conv2D(out_channels, kernel, stride, kernel // 2, in_channels=in_channels, use_bias=False)


def batch_norm(channels: int) -> nn.BatchNorm:
    return nn.BatchNorm(in_channels=channels)


def stem(names: tuple[str, str, str, str], channels: int) -> dict[str, nn.HybridBlock]:
    """Both nets' first layers under the net's `names` for them: 7x7/2 convolution to `channels`,
    batch-norm, ReLU, 3x3/2 max-pool padded 1 (after the ReLU, a zero pad gives torch's -inf pad's
    maximum)."""
    layers = (conv(channels, 3, 7, 2), batch_norm(channels), nn.Activation("relu"), nn.MaxPool2D(3, 2, 1))
    return dict(zip(names, layers))


class Bottleneck(nn.HybridBlock):
    """torchvision's `Bottleneck`: 1x1, 3x3 (strided), 1x1 expanding to `out_channels`, each
    batch-normed; the shortcut a strided 1x1 projection (`downsample`) where the shape changes."""

    def __init__(self, in_channels: int, width: int, out_channels: int, stride: int):
        super().__init__()
        self.conv1, self.bn1 = conv(width, in_channels, 1), batch_norm(width)
        self.conv2, self.bn2 = conv(width, width, 3, stride), batch_norm(width)
        self.conv3, self.bn3 = conv(out_channels, width, 1), batch_norm(out_channels)
        self.downsample = None
        if stride != 1 or in_channels != out_channels:
            self.downsample = nn.HybridSequential()
            self.downsample.add(conv(out_channels, in_channels, 1, stride), batch_norm(out_channels))

    def hybrid_forward(self, F, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        shortcut = x if self.downsample is None else self.downsample(x)
        return F.relu(out + shortcut)


def resnet(shape: ResNet, num_classes: int) -> NamedSequential:
    """torchvision's `ResNet` of `shape`: stem, its stages of bottlenecks, global average, `fc`."""
    layers = stem(("conv1", "bn1", "relu", "maxpool"), shape.stem_channels)
    in_channels = shape.stem_channels
    for stage, blocks in enumerate(shape.stages, start=1):
        width = shape.width(stage)
        layer = nn.HybridSequential()
        for block in range(blocks):
            stride = 2 if block == 0 and stage > 1 else 1
            layer.add(Bottleneck(in_channels, width, width * shape.expansion, stride))
            in_channels = width * shape.expansion
        layers[f"layer{stage}"] = layer
    layers["avgpool"] = nn.GlobalAvgPool2D()
    layers["fc"] = nn.Dense(num_classes, in_units=in_channels)
    return NamedSequential(**layers)


class DenseLayer(nn.HybridBlock):
    """torchvision's `_DenseLayer`: BN-ReLU-1x1 to the bottleneck width, BN-ReLU-3x3 to the growth,
    its output appended after its input (channels in torchvision's order)."""

    def __init__(self, in_channels: int, shape: DenseNet):
        super().__init__()
        width = shape.bottleneck_width
        self.norm1, self.conv1 = batch_norm(in_channels), conv(width, in_channels, 1)
        self.norm2, self.conv2 = batch_norm(width), conv(shape.growth, width, 3)

    def hybrid_forward(self, F, x):
        out = self.conv1(F.relu(self.norm1(x)))
        out = self.conv2(F.relu(self.norm2(out)))
        return F.concat(x, out, dim=1)


def transition(in_channels: int) -> NamedSequential:
    """torchvision's `_Transition`: BN-ReLU-1x1 halving the channels, 2x2 average pooling."""
    return NamedSequential(
        norm=batch_norm(in_channels),
        relu=nn.Activation("relu"),
        conv=conv(in_channels // 2, in_channels, 1),
        pool=nn.AvgPool2D(2, 2),
    )


class DenseNetModel(nn.HybridBlock):
    """torchvision's `DenseNet` of `shape`: `features` (stem, dense blocks and transitions,
    `norm5`), then ReLU, global average and `classifier`."""

    def __init__(self, shape: DenseNet, num_classes: int):
        super().__init__()
        features = stem(("conv0", "norm0", "relu0", "pool0"), shape.stem_channels)
        channels = shape.stem_channels
        for block, layers in enumerate(shape.blocks, start=1):
            dense = {}
            for layer in range(1, layers + 1):
                dense[f"denselayer{layer}"] = DenseLayer(channels, shape)
                channels += shape.growth
            features[f"denseblock{block}"] = NamedSequential(**dense)
            if block < len(shape.blocks):
                features[f"transition{block}"] = transition(channels)
                channels //= 2
        features["norm5"] = batch_norm(channels)
        self.features = NamedSequential(**features)
        self.pool = nn.GlobalAvgPool2D()
        self.classifier = nn.Dense(num_classes, in_units=channels)

    def hybrid_forward(self, F, x):
        return self.classifier(self.pool(F.relu(self.features(x))))
