"""The framework-neutral model catalogue.

Every adapter builds these same architectures; this table fixes what "the same" means
(input size, number of outputs, loss), so a framework cannot silently train something else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from mgbench.common.errors import UsageError

LossKind = Literal["softmax", "sigmoid"]


@dataclass(frozen=True)
class ModelSpec:
    name: str
    image_size: int
    num_classes: int
    loss: LossKind
    description: str
    reference_parameters: int
    """Trainable parameters of the torchvision architecture with this head: every framework's
    build must have exactly these, or declare its difference (`ModelBuilders.parameter_offsets`)."""
    reference_tensors: int
    """Trainable tensors (weights, biases, batch-norm scales and shifts) of that architecture: how
    many gradients a framework that exchanges them one by one hands over (`ModelBuilders.tensor_offsets`
    where its build differs)."""


MODELS: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        ModelSpec(
            "densenet121",
            224,
            14,
            "sigmoid",
            "DenseNet-121 as CheXNet: 14 sigmoid outputs, binary cross-entropy",
            6_968_206,
            364,
        ),
        ModelSpec("resnet50", 224, 1000, "softmax", "ResNet-50, 1000-way softmax (ImageNet)", 25_557_032, 161),
        ModelSpec(
            "inception_v3",
            299,
            1000,
            "softmax",
            "Inception-v3 without the auxiliary head, 299 px, 1000-way softmax",
            23_834_568,
            284,
        ),
        ModelSpec(
            "tiny",
            32,
            10,
            "softmax",
            "two conv layers and a linear head, no batch-norm: smoke tests and exact equivalence checks",
            5_418,
            6,
        ),
    )
}


def model_spec(name: str) -> ModelSpec:
    """Look a model up, failing with the list of known names."""
    try:
        return MODELS[name]
    except KeyError:
        raise UsageError(f"unknown model {name!r}; known models: {', '.join(MODELS)}") from None
