"""The catalogue models in PyTorch: torchvision's architectures (random weights: nothing is
downloaded) and their losses. Horovod trains these same modules, and `flops.py` counts their
work. Each model `spec.py` declares (`TORCHVISION`) is built by the function of its name here,
from its number of outputs."""

from __future__ import annotations

from collections.abc import Iterable

import torch
import torchvision
from torch import nn

from mgbench.common.kinds import DataFormat
from mgbench.common.models import Hyperparameters, ModelSpec
from mgbench.frameworks.pytorch.spec import TORCHVISION


def tiny(num_classes: int) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(32, num_classes),
    )


def densenet121(num_classes: int) -> nn.Module:
    return torchvision.models.densenet121(weights=None, num_classes=num_classes)


def resnet50(num_classes: int) -> nn.Module:
    return torchvision.models.resnet50(weights=None, num_classes=num_classes)


def inception_v3(num_classes: int) -> nn.Module:
    return torchvision.models.inception_v3(weights=None, aux_logits=False, init_weights=True, num_classes=num_classes)


def build_model(spec: ModelSpec, image_size: int, data_format: DataFormat) -> nn.Module:
    """The architecture for `spec`, in the memory format of `data_format` (torch's modules take
    any image size)."""
    model = TORCHVISION.builder(spec.name, "pytorch")(spec.num_classes)
    return model.to(memory_format=torch.channels_last if data_format.channels_last else torch.contiguous_format)


def build_optimizer(
    parameters: Iterable[torch.Tensor], learning_rate: float, hyperparameters: Hyperparameters
) -> torch.optim.SGD:
    """SGD as the job declares it (momentum, Nesterov, weight decay), for every torch-stepped model."""
    return torch.optim.SGD(
        parameters,
        lr=learning_rate,
        momentum=hyperparameters.sgd_momentum,
        nesterov=hyperparameters.nesterov,
        weight_decay=hyperparameters.weight_decay,
    )


def build_loss(spec: ModelSpec) -> nn.Module:
    return nn.BCEWithLogitsLoss() if spec.loss == "sigmoid" else nn.CrossEntropyLoss()
