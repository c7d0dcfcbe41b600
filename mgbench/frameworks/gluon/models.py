"""The catalogue models in Gluon (random weights: nothing is downloaded), their losses and
trainable parameters.

ResNet-50 and DenseNet-121 are torchvision's, built from `gluon.nn` layers under torchvision's
module names (`architectures.py`), and so is `tiny` (its layers at torchvision's indices): the
shared initial weights map onto them by name (`weights.py`). Inception-v3 is the model zoo's, its
fixed 8x8 final average pooling made global (the same at its native 299 px) so `--image-size`
works. ViT-B/16 is torchvision's `VisionTransformer` in `gluon.nn` (`transformer.py`), named as
torchvision names it too.
"""

from __future__ import annotations

from mxnet import gluon
from mxnet.gluon import nn
from mxnet.gluon.model_zoo import vision

from mgbench.core.kinds import DataFormat
from mgbench.core.models import ModelSpec
from mgbench.frameworks.gluon import architectures, transformer
from mgbench.frameworks.gluon.spec import GLUON_MODELS


def tiny(spec: ModelSpec, image_size: int) -> nn.HybridSequential:
    """The catalogue's `tiny` laid out as torch's `nn.Sequential` (convolutions at 0 and 3, the
    linear head at 7), so its layers carry the shared weights' names."""
    first, second = spec.convnet.channels
    net = nn.HybridSequential()
    net.add(
        nn.Conv2D(first, 3, padding=1, in_channels=3),
        nn.Activation("relu"),
        nn.MaxPool2D(2),
        nn.Conv2D(second, 3, padding=1, in_channels=first),
        nn.Activation("relu"),
        nn.GlobalAvgPool2D(),
        nn.Flatten(),
        nn.Dense(spec.num_classes, in_units=second),
    )
    return net


def with_global_pooling(net: gluon.HybridBlock) -> gluon.HybridBlock:
    """Replace the model zoo's fixed-size final average pooling by a global one (same at native size)."""
    blocks = [nn.GlobalAvgPool2D() if isinstance(block, nn.AvgPool2D) else block for block in net.features]
    features = nn.HybridSequential(prefix=net.features.prefix)
    features.add(*blocks)
    net.features = features
    return net


def densenet121(spec: ModelSpec, image_size: int) -> gluon.HybridBlock:
    return architectures.DenseNetModel(spec.convnet, spec.num_classes)


def resnet50(spec: ModelSpec, image_size: int) -> gluon.HybridBlock:
    return architectures.resnet(spec.convnet, spec.num_classes)


def inception_v3(spec: ModelSpec, image_size: int) -> gluon.HybridBlock:
    return with_global_pooling(vision.inception_v3(classes=spec.num_classes))


def vit_b_16(spec: ModelSpec, image_size: int) -> gluon.HybridBlock:
    return transformer.vision_transformer(spec, image_size)


def build_model(spec: ModelSpec, image_size: int, data_format: DataFormat) -> gluon.HybridBlock:
    """The architecture for `spec` (Gluon's nets take any image size, in channels_first only,
    which the registry holds them to)."""
    return GLUON_MODELS.builder(spec.name, "gluon")(spec, image_size)


LOSSES: dict[str, type[gluon.loss.Loss]] = {
    "sigmoid": gluon.loss.SigmoidBinaryCrossEntropyLoss,
    "softmax": gluon.loss.SoftmaxCrossEntropyLoss,
}
"""Gluon's loss for each declared loss kind (`core.objective.LossKind`)."""


def build_loss(spec: ModelSpec) -> gluon.loss.Loss:
    """Per-sample losses; the sigmoid loss averages each sample's outputs, like BCEWithLogits."""
    return LOSSES[spec.objective.loss]()


def trainable(net: gluon.Block) -> dict[str, gluon.Parameter]:
    return {name: p for name, p in net.collect_params().items() if p.grad_req != "null"}
