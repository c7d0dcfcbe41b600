"""The catalogue models in PyTorch: torchvision's architectures (random weights: nothing is
downloaded) and their losses. Horovod trains these same modules, and `flops.py` counts their
work. Each model `spec.py` declares (`TORCHVISION`) is built by the function of its name here,
from its catalogue entry and the image size (which only a transformer's position embedding
depends on: the convolutional networks pool globally and take any size)."""

from __future__ import annotations

from collections.abc import Iterable

import torch
import torchvision
from torch import nn

from mgbench.core.kinds import DataFormat
from mgbench.core.models import Hyperparameters, ModelSpec
from mgbench.frameworks.pytorch.spec import TORCHVISION


def tiny(spec: ModelSpec, image_size: int) -> nn.Module:
    first, second = spec.convnet.channels
    return nn.Sequential(
        nn.Conv2d(3, first, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(first, second, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(second, spec.num_classes),
    )


def densenet121(spec: ModelSpec, image_size: int) -> nn.Module:
    """torchvision's `DenseNet` at the catalogue's shape (`densenet121` is this one at its blocks)."""
    shape = spec.convnet
    return torchvision.models.DenseNet(
        shape.growth, shape.blocks, shape.stem_channels, shape.bottleneck, num_classes=spec.num_classes
    )


def resnet50(spec: ModelSpec, image_size: int) -> nn.Module:
    """torchvision's `ResNet` of bottlenecks at the catalogue's stages (`resnet50` is this one at
    its stages; its stem and expansion are the catalogue's, fixed in torchvision's own)."""
    return torchvision.models.ResNet(
        torchvision.models.resnet.Bottleneck, list(spec.convnet.stages), num_classes=spec.num_classes
    )


def inception_v3(spec: ModelSpec, image_size: int) -> nn.Module:
    return torchvision.models.inception_v3(
        weights=None, aux_logits=False, init_weights=True, num_classes=spec.num_classes
    )


def vit_b_16(spec: ModelSpec, image_size: int) -> nn.Module:
    """torchvision's ViT-B/16 (`vit_b_16` is this `VisionTransformer` at the catalogue's shape)."""
    shape = spec.transformer
    return torchvision.models.VisionTransformer(
        image_size,
        shape.patch_size,
        shape.layers,
        shape.heads,
        shape.width,
        shape.mlp_width,
        num_classes=spec.num_classes,
    )


def build_model(spec: ModelSpec, image_size: int, data_format: DataFormat) -> nn.Module:
    """The architecture for `spec` at `image_size` px, in the memory format of `data_format`."""
    model = TORCHVISION.builder(spec.name, "pytorch")(spec, image_size)
    return model.to(memory_format=torch.channels_last if data_format.channels_last else torch.contiguous_format)


def build_optimizer(
    parameters: Iterable[torch.Tensor], learning_rate: float, hyperparameters: Hyperparameters, fused: bool = False
) -> torch.optim.SGD:
    """SGD as the job declares it (momentum, Nesterov, weight decay), for every torch-stepped model;
    `fused`: torch's fused kernel steps every parameter at once (`--fused-optimizer`)."""
    return torch.optim.SGD(
        parameters,
        lr=learning_rate,
        momentum=hyperparameters.sgd_momentum,
        nesterov=hyperparameters.nesterov,
        weight_decay=hyperparameters.weight_decay,
        fused=fused or None,
    )


def build_loss(spec: ModelSpec) -> nn.Module:
    return nn.BCEWithLogitsLoss() if spec.loss == "sigmoid" else nn.CrossEntropyLoss()
