"""The framework-neutral model catalogue.

Every adapter builds these same architectures; this table fixes what "the same" means
(input size, number of outputs, loss), so a framework cannot silently train something else.
A plugin (`MGBENCH_PLUGINS`) adds its own models through its module's `ADDED_MODELS`, a tuple
of `ModelSpec`: `catalogue()` is the built-in table with them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from mgbench.core.errors import UsageError
from mgbench.core.plugins import plugin_modules, plugin_named

LossKind = Literal["softmax", "sigmoid"]


@dataclass(frozen=True)
class Hyperparameters:
    """What every framework must set alike for two of them to train the same job, declared once
    here and applied by every adapter (frameworks' defaults differ: Keras keeps 0.99 of the
    batch-norm average where torch keeps 0.9, Chainer's epsilon is 2e-5)."""

    batch_norm_momentum: float = 0.1
    """Weight of a batch's statistics in batch-norm's moving averages (torch's convention;
    Keras', Gluon's and Chainer's momentum or decay is 1 minus this)."""
    batch_norm_epsilon: float = 1e-5
    sgd_momentum: float = 0.9
    """Heavy-ball momentum, not Nesterov's, in torch's form (b = m b + g; w -= lr b) in every
    framework: Keras', Gluon's and Chainer's own (v = m v - lr g; w += v) give the same steps only
    at a constant rate, and the job's warm-up changes it every step."""
    nesterov: bool = False
    weight_decay: float = 0.0
    """Zero: frameworks apply it differently (torch, Gluon and Chainer add it to the gradient
    before momentum; Keras' SGD decays the weights apart), so a shared job leaves it out."""
    loss_reduction: str = "mean"
    """The loss of a step is the mean over the global batch (and, for sigmoid outputs, over the
    outputs): gradients do not grow with the batch or the device count."""


HYPERPARAMETERS = Hyperparameters()


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


LAYOUT_NOTE = (
    "a transformer: --data-format changes only the layout of the patch embedding's input; its "
    "tokens are (batch, tokens, width) in every framework"
)


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
    hyperparameters: Hyperparameters = HYPERPARAMETERS
    transformer: VisionTransformer | None = None
    """A vision transformer's shape (None: a convolutional network, whose parameters do not
    depend on the image size)."""

    def parameters_at(self, image_size: int) -> int:
        """The reference parameter count at `image_size` px: a transformer's position embedding
        holds a vector per token, so it grows with the image; a network with global pooling does not."""
        if self.transformer is None:
            return self.reference_parameters
        extra_tokens = self.transformer.tokens(image_size) - self.transformer.tokens(self.image_size)
        return self.reference_parameters + extra_tokens * self.transformer.width

    @property
    def layout_note(self) -> str | None:
        """What `--data-format` means for this model, where it is not a convolutional network's layout."""
        return LAYOUT_NOTE if self.transformer else None


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
            "vit_b_16",
            224,
            1000,
            "softmax",
            "ViT-B/16: 16-px patches, 12 layers, width 768, 12 heads, MLP 3072, 1000-way softmax",
            86_567_656,
            152,
            transformer=VisionTransformer(patch_size=16, layers=12, width=768, heads=12, mlp_width=3072),
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


def catalogue() -> dict[str, ModelSpec]:
    """The built-in models, then those the plugins add (`ADDED_MODELS`); an entry that is not a
    `ModelSpec`, or names a model already there, is one UsageError (a run names its model by
    name alone)."""
    models = dict(MODELS)
    for module in plugin_modules():
        for spec in getattr(module, "ADDED_MODELS", ()):
            if not isinstance(spec, ModelSpec) or spec.name in models:
                raise UsageError(
                    f"{plugin_named(module.__name__)}, whose ADDED_MODELS has {spec!r}: not a new ModelSpec"
                )
            models[spec.name] = spec
    return models


def model_spec(name: str) -> ModelSpec:
    """Look a model up in the catalogue, failing with the list of known names."""
    models = catalogue()
    try:
        return models[name]
    except KeyError:
        raise UsageError(f"unknown model {name!r}; known models: {', '.join(models)}") from None
