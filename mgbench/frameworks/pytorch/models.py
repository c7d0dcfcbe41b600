"""The catalogue models in PyTorch: torchvision's architectures (random weights: nothing is
downloaded), GPT-2 (`gpt2.py`), and their losses. Horovod trains these same modules, and
`flops.py` counts the image models' work. Each model `spec.py` declares (`TORCHVISION`) is built
by the function named as its family here (`ModelSpec.family`: its own name, or `gpt2` for every
GPT-2 size), from its catalogue entry and the input size (an image's side, which only a
transformer's position embedding depends on: the convolutional networks pool globally and take
any size; or a sequence's tokens, which GPT-2's weights do not depend on). The model's declared
loss and optimizer map onto torch's own classes here (`LOSSES`, `OPTIMIZERS`), for every
torch-stepped adapter."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
import torchvision
from torch import nn

from mgbench.core.kinds import DataFormat
from mgbench.core.models import ModelSpec
from mgbench.core.optimization import SGD, AdamW, Optimizer
from mgbench.frameworks.pytorch.gpt2 import GPT2LM, build_gpt2, language_model_loss
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


def gpt2(spec: ModelSpec, seq_len: int) -> GPT2LM:
    """GPT-2 at the catalogue's shape (`spec.language_model`), every size, initialised as GPT-2
    is by torch's generator seeded from torch's seed (the job's: the adapter seeds torch before
    it builds), which `--init same` then replaces by the shared draw. Its weights do not depend
    on `seq_len`: the position embedding has a row per position of the context."""
    assert spec.language_model is not None, f"{spec.name} is no GPT-2"
    return build_gpt2(spec.language_model, torch.initial_seed())


def build_model(spec: ModelSpec, input_size: int, data_format: DataFormat | None) -> nn.Module:
    """The architecture for `spec` at `input_size` (px or tokens), in the memory format of
    `data_format` (None: an input without a layout, tokens)."""
    model = TORCHVISION.builder(spec.name, "pytorch")(spec, input_size)
    channels_last = data_format is not None and data_format.channels_last
    return model.to(memory_format=torch.channels_last if channels_last else torch.contiguous_format)


def sgd(parameters: Iterable[torch.Tensor], learning_rate: float, declared: SGD, fused: bool) -> torch.optim.SGD:
    return torch.optim.SGD(
        parameters,
        lr=learning_rate,
        momentum=declared.momentum,
        nesterov=declared.nesterov,
        weight_decay=declared.weight_decay,
        fused=fused or None,
    )


def adamw(parameters: Iterable[torch.Tensor], learning_rate: float, declared: AdamW, fused: bool) -> torch.optim.AdamW:
    return torch.optim.AdamW(
        parameters,
        lr=learning_rate,
        betas=declared.betas,
        eps=declared.eps,
        weight_decay=declared.weight_decay,
        fused=fused or None,
    )


OPTIMIZERS: dict[str, Callable[..., torch.optim.Optimizer]] = {SGD.kind: sgd, AdamW.kind: adamw}
"""torch's optimizer for each declared kind: the kinds `spec.py` declares it builds (`Capabilities.optimizers`)."""


def build_optimizer(
    parameters: Iterable[torch.Tensor], learning_rate: float, declared: Optimizer, fused: bool = False
) -> torch.optim.Optimizer:
    """The model's declared optimizer (`ModelSpec.optimization`) over `parameters`, starting at
    `learning_rate`; `fused`: torch's fused kernel steps every parameter at once (`--fused-optimizer`)."""
    return OPTIMIZERS[declared.kind](parameters, learning_rate, declared, fused)


class LanguageModelLoss(nn.Module):
    """`gpt2.language_model_loss` as a module: cross-entropy over the vocabulary, averaged over
    every token of the batch, in float32."""

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return language_model_loss(logits, targets)


LOSSES: dict[str, Callable[[], nn.Module]] = {
    "sigmoid": nn.BCEWithLogitsLoss,
    "softmax": nn.CrossEntropyLoss,
    "next_token": LanguageModelLoss,
}
"""torch's loss for each declared loss kind (`core.objective.LossKind`), the mean over the batch
(over every token of it, for the next token)."""


def build_loss(spec: ModelSpec) -> nn.Module:
    return LOSSES[spec.objective.loss]()
