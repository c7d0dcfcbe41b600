"""The catalogue models in Gluon: the model zoo's architectures (random weights: nothing is
downloaded), their losses and trainable parameters.

Two changes that do not alter the zoo's models at their native input size: the fixed-size final
average pooling (7x7 in DenseNet, 8x8 in Inception-v3) becomes a global average pooling, so
`--image-size` works; and ResNet-50 v1's 1x1 convolutions carry biases right before batch-norm,
which cancels them, so those 18,880 biases stay at zero and are not trained (the trainable
count is then torchvision's 25,557,032). Gluon's ResNet-50 v1 strides in the first 1x1
convolution of a down-sampling block; torchvision's (v1.5) in the 3x3.
"""

from __future__ import annotations

from mxnet import gluon
from mxnet.gluon import nn
from mxnet.gluon.model_zoo import vision

from mgbench.common.models import ModelSpec
from mgbench.frameworks.gluon.spec import GLUON_MODELS


def tiny(num_classes: int) -> nn.HybridSequential:
    net = nn.HybridSequential()
    net.add(
        nn.Conv2D(16, 3, padding=1, in_channels=3, activation="relu"),
        nn.MaxPool2D(2),
        nn.Conv2D(32, 3, padding=1, in_channels=16, activation="relu"),
        nn.GlobalAvgPool2D(),
        nn.Flatten(),
        nn.Dense(num_classes, in_units=32),
    )
    return net


def with_global_pooling(net: gluon.HybridBlock) -> gluon.HybridBlock:
    """Replace the model zoo's fixed-size final average pooling by a global one (same at native size)."""
    blocks = [nn.GlobalAvgPool2D() if isinstance(block, nn.AvgPool2D) else block for block in net.features]
    features = nn.HybridSequential(prefix=net.features.prefix)
    features.add(*blocks)
    net.features = features
    return net


def frozen_biases_before_batchnorm(net: gluon.Block) -> gluon.Block:
    """Keep convolution biases at their zero initialisation (batch-norm right after cancels them)."""

    def freeze(block: gluon.Block) -> None:
        if isinstance(block, nn.Conv2D) and block.bias is not None:
            block.bias.grad_req = "null"

    net.apply(freeze)
    return net


def densenet121(num_classes: int) -> gluon.HybridBlock:
    return with_global_pooling(vision.densenet121(classes=num_classes))


def resnet50(num_classes: int) -> gluon.HybridBlock:
    return frozen_biases_before_batchnorm(vision.resnet50_v1(classes=num_classes))


def inception_v3(num_classes: int) -> gluon.HybridBlock:
    return with_global_pooling(vision.inception_v3(classes=num_classes))


def build_model(spec: ModelSpec, image_size: int, data_format: str) -> gluon.HybridBlock:
    """The architecture for `spec` (Gluon's nets take any image size, in channels_first only,
    which the registry holds them to)."""
    return GLUON_MODELS.builder(spec.name, "gluon")(spec.num_classes)


def build_loss(spec: ModelSpec) -> gluon.loss.Loss:
    """Per-sample losses; the sigmoid loss averages each sample's 14 outputs, like BCEWithLogits."""
    if spec.loss == "sigmoid":
        return gluon.loss.SigmoidBinaryCrossEntropyLoss()
    return gluon.loss.SoftmaxCrossEntropyLoss()


def trainable(net: gluon.Block) -> dict[str, gluon.Parameter]:
    return {name: p for name, p in net.collect_params().items() if p.grad_req != "null"}
