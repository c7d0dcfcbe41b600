"""The framework-neutral model catalogue.

Every adapter builds these same architectures; this table fixes what "the same" means
(input size, number of outputs, objective, optimization), so a framework cannot silently train
something else.
A plugin (`MGBENCH_PLUGINS`) adds its own models through its module's `ADDED_MODELS`, a tuple
of `ModelSpec`: `catalogue()` is the built-in table with them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mgbench.core.architectures import ConvNet, DenseNet, ResNet, SmallConvNet, VisionTransformer, counts
from mgbench.core.errors import UsageError, did_you_mean
from mgbench.core.gpt2 import GPT2, GPT2_SHAPES, LanguageModelWork
from mgbench.core.inputs import ImageInput, SampleInput, TokenInput
from mgbench.core.objective import LANGUAGE_MODEL, MULTI_LABEL_BCE, SOFTMAX_CROSS_ENTROPY, Objective
from mgbench.core.optimization import IMAGE_SGD, LANGUAGE_MODEL_ADAMW, Optimization
from mgbench.core.plugins import plugin_modules, plugin_named
from mgbench.core.work import CountedOnReference, Work


@dataclass(frozen=True)
class Hyperparameters:
    """The layers' settings every framework must set alike for two of them to train the same job,
    declared once here and applied by every adapter (frameworks' defaults differ: Keras keeps 0.99 of the
    batch-norm average where torch keeps 0.9, Chainer's epsilon is 2e-5)."""

    batch_norm_momentum: float = 0.1
    """Weight of a batch's statistics in batch-norm's moving averages (torch's convention;
    Keras', Gluon's and Chainer's momentum or decay is 1 minus this)."""
    batch_norm_epsilon: float = 1e-5


HYPERPARAMETERS = Hyperparameters()


LAYOUT_NOTE = (
    "a transformer: --data-format changes only the layout of the patch embedding's input; its "
    "tokens are (batch, tokens, width) in every framework"
)


@dataclass(frozen=True)
class ModelSpec:
    name: str
    input: SampleInput
    """What one training sample is (`core.inputs`): an image of a size, or a sequence of tokens."""
    num_classes: int
    """The head's outputs: the classes of an image model, the vocabulary of a language model."""
    objective: Objective
    """Its loss and the metrics its held-out splits give (`core.objective`); a dataset refits it to
    its labels (`DatasetDescription.task_spec`)."""
    description: str
    reference_parameters: int = 0
    """Trainable parameters of the torchvision architecture with this head: every framework's
    build must have exactly these, or declare its difference (`ModelBuilders.parameter_offsets`).
    Left out (0), they are counted from `convnet`'s layers."""
    reference_tensors: int = 0
    """Trainable tensors (weights, biases, batch-norm scales and shifts) of that architecture: how
    many gradients a framework that exchanges them one by one hands over (`ModelBuilders.tensor_offsets`
    where its build differs). Left out (0), they are counted from `convnet`'s layers."""
    hyperparameters: Hyperparameters = HYPERPARAMETERS
    transformer: VisionTransformer | None = None
    """A vision transformer's shape (None: a convolutional network, whose parameters do not
    depend on the image size)."""
    convnet: ConvNet | None = None
    """A convolutional network's shape, which every builder and the shared initial weights read
    (None: a transformer, or a network whose draw no other framework names alike)."""
    gpu_batch_per_device: int | None = None
    """The batch per GPU of a job given none (None: the job's default, `core.job.GPU_BATCH_PER_DEVICE`):
    a language model's samples are whole sequences, each many images' worth of work and memory."""
    language_model: GPT2 | None = None
    """A GPT-2 language model's shape (`core.gpt2`), which every builder and the shared initial
    weights read (None: an image model)."""
    work: Work | None = None
    """How the work of one training sample is known (`core.work`): counted on the reference
    architecture, or a closed form the declaration computes (None: its rows carry no FLOPs)."""
    family: str = ""
    """The name of the callable each framework's builder module builds it with (`ModelBuilders`):
    its own name unless it is one size of a family whose builder reads its shape (every GPT-2 is
    built by `gpt2`), so a new size is one declaration."""
    optimization: Optimization = field(kw_only=True)
    """Its optimizer with its hyperparameters and its learning-rate schedule (`core.optimization`),
    declared by every model: every framework steps it alike, or refuses it before launching."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "family", self.family or self.name)
        if not isinstance(self.objective, Objective) or not isinstance(self.optimization, Optimization):
            raise UsageError(
                f"model {self.name}: declare its objective (core/objective.py) and its optimization "
                f"(core/optimization.py), got {self.objective!r} and {self.optimization!r}"
            )
        if self.language_model is not None:
            arrays = list(self.language_model.arrays())
            object.__setattr__(self, "reference_parameters", sum(array.size for array in arrays))
            object.__setattr__(self, "reference_tensors", len(arrays))
        if self.convnet is not None and not (self.reference_parameters and self.reference_tensors):
            parameters, tensors = counts(self.convnet.layers(self.num_classes))
            object.__setattr__(self, "reference_parameters", self.reference_parameters or parameters)
            object.__setattr__(self, "reference_tensors", self.reference_tensors or tensors)
        if not (self.reference_parameters and self.reference_tensors):
            raise UsageError(
                f"model {self.name}: give its reference parameter and tensor counts, or its convnet's shape"
            )

    @property
    def drawn(self) -> bool:
        """Whether the shared initial weights have a reference draw of it (`initial_weights`):
        its shape is declared here, as a convolutional network's, a transformer's or a language model's."""
        return self.convnet is not None or self.transformer is not None or self.language_model is not None

    @property
    def image_size(self) -> int:
        """The native side in px of an image model's input; a language model has none."""
        if not isinstance(self.input, ImageInput):
            raise UsageError(f"{self.name} trains on {self.input.unit.name}, not images: it has no image size")
        return self.input.size

    def parameters_at(self, image_size: int) -> int:
        """The reference parameter count at `image_size` px: a transformer's position embedding
        holds a vector per token, so it grows with the image; a network with global pooling does not."""
        if self.transformer is None:
            return self.reference_parameters
        extra_tokens = self.transformer.tokens(image_size) - self.transformer.tokens(self.input.extent)
        return self.reference_parameters + extra_tokens * self.transformer.width

    @property
    def layout_note(self) -> str | None:
        """What `--data-format` means for this model, where it is not a convolutional network's layout."""
        return LAYOUT_NOTE if self.transformer else None


COUNTED_ON_TORCHVISION = CountedOnReference(
    framework="pytorch", counter="mgbench.frameworks.pytorch.flops", architecture="torchvision"
)
"""The catalogue's networks' work: counted on torchvision's build, which PyTorch trains, in the
pytorch environment (`frameworks/pytorch/flops.py`)."""


MODELS: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        ModelSpec(
            name="densenet121",
            input=ImageInput(224),
            num_classes=14,
            objective=MULTI_LABEL_BCE,
            description="DenseNet-121 as CheXNet: 14 sigmoid outputs, binary cross-entropy",
            convnet=DenseNet(blocks=(6, 12, 24, 16)),
            work=COUNTED_ON_TORCHVISION,
            optimization=IMAGE_SGD,
        ),
        ModelSpec(
            name="resnet50",
            input=ImageInput(224),
            num_classes=1000,
            objective=SOFTMAX_CROSS_ENTROPY,
            description="ResNet-50, 1000-way softmax (ImageNet)",
            convnet=ResNet(stages=(3, 4, 6, 3)),
            work=COUNTED_ON_TORCHVISION,
            optimization=IMAGE_SGD,
        ),
        ModelSpec(
            name="inception_v3",
            input=ImageInput(299),
            num_classes=1000,
            objective=SOFTMAX_CROSS_ENTROPY,
            description="Inception-v3 without the auxiliary head, 299 px, 1000-way softmax",
            reference_parameters=23_834_568,
            reference_tensors=284,
            work=COUNTED_ON_TORCHVISION,
            optimization=IMAGE_SGD,
        ),
        ModelSpec(
            name="vit_b_16",
            input=ImageInput(224),
            num_classes=1000,
            objective=SOFTMAX_CROSS_ENTROPY,
            description="ViT-B/16: 16-px patches, 12 layers, width 768, 12 heads, MLP 3072, 1000-way softmax",
            reference_parameters=86_567_656,
            reference_tensors=152,
            transformer=VisionTransformer(patch_size=16, layers=12, width=768, heads=12, mlp_width=3072),
            work=COUNTED_ON_TORCHVISION,
            optimization=IMAGE_SGD,
        ),
        ModelSpec(
            name="tiny",
            input=ImageInput(32),
            num_classes=10,
            objective=SOFTMAX_CROSS_ENTROPY,
            description="two conv layers and a linear head, no batch-norm: smoke tests and exact equivalence checks",
            convnet=SmallConvNet(channels=(16, 32)),
            work=COUNTED_ON_TORCHVISION,
            optimization=IMAGE_SGD,
        ),
        *(
            ModelSpec(
                name=name,
                input=TokenInput(shape.context, shape.vocabulary),
                num_classes=shape.vocabulary,
                objective=LANGUAGE_MODEL,
                description=(
                    f"GPT-2 {shape.parameters() / 1e6:.1f}M: {shape.layers} layers, {shape.heads} heads, "
                    f"width {shape.width}, tied embeddings, vocabulary padded to {shape.padded_vocabulary:,}"
                ),
                gpu_batch_per_device=16,
                language_model=shape,
                family="gpt2",
                work=LanguageModelWork(shape),
                optimization=LANGUAGE_MODEL_ADAMW,
            )
            for name, shape in GPT2_SHAPES.items()
        ),
    )
}
"""Inception-v3 has no shape here: torchvision draws it from truncated normals of per-layer
widths that no other framework's build names alike, so its runs start from each framework's own
initialiser, and its counts are declared."""


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


def known_model(name: object) -> ModelSpec | None:
    """`name`'s spec, or None where the catalogue does not hold it: what a reader of rows asks,
    since a folder may hold a plugin's model that is not loaded where it is read."""
    try:
        return model_spec(str(name))
    except UsageError:
        return None


def model_spec(name: str) -> ModelSpec:
    """Look a model up in the catalogue, failing with the list of known names."""
    models = catalogue()
    try:
        return models[name]
    except KeyError:
        raise UsageError(
            f"unknown model {name!r}{did_you_mean(name, models)}; known models: {', '.join(models)}"
        ) from None
