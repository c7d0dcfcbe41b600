"""Where a Keras model starts: the shared initial weights (`--init`), and the job's batch-norm
settings, for every Keras backend.

The shared weights are in torchvision's names and layouts (GPT-2's in its PyTorch module's); each
Keras layer that holds weights is mapped to its torchvision module by name (`tiny`, `resnet50` and
`vit_b_16` are built with torchvision's names, "_" for ".": `torchvision_name`, and `vit_torch_name`
where torchvision's own names hold "_"; DenseNet-121 keeps keras.applications' own:
`densenet_torch_name`; GPT-2's layers are named after its PyTorch modules: `gpt2.torch_module`), and
its arrays are converted to Keras' layouts. Every layer with weights takes its arrays and every array is taken
once, so a build that differs from torchvision's fails in one line.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial

import keras
import numpy as np

from mgbench.core.config import RunConfig
from mgbench.core.errors import UsageError
from mgbench.core.initial_weights import InitialWeights
from mgbench.core.models import Hyperparameters, ModelSpec
from mgbench.frameworks.keras import gpt2, models
from mgbench.frameworks.keras.transformer import ClassTokenAndPositions, SelfAttention

DENSE_BLOCK_LAYER = re.compile(r"conv(\d)_block(\d+)_(\d_(?:bn|conv))")
TRANSITION = re.compile(r"pool(\d)_(bn|conv)")
DENSE_LAYER_PARTS = {"0_bn": "norm1", "1_conv": "conv1", "1_bn": "norm2", "2_conv": "conv2"}
"""keras.applications' parts of a dense layer (`conv{stage}_block{n}_{part}`) by torchvision's."""
TRANSITION_PARTS = {"bn": "norm", "conv": "conv"}
"""keras.applications' parts of a transition (`pool{stage}_{part}`) by torchvision's."""
DENSENET_FIXED = {
    "conv1_conv": "features.conv0",
    "conv1_bn": "features.norm0",
    "bn": "features.norm5",
    "predictions": "classifier",
}
ENCODER_LAYER = re.compile(r"encoder_layers_encoder_layer_(\d+)_(\w+)")
ENCODER_LAYER_PARTS = {
    "ln_1": "ln_1",
    "self_attention": "self_attention",
    "ln_2": "ln_2",
    "mlp_0": "mlp.0",
    "mlp_3": "mlp.3",
}
"""The parts of ViT's encoder block (`encoder_layers_encoder_layer_{i}_{part}`) by torchvision's."""
VIT_FIXED = {
    "conv_proj": "conv_proj",
    "class_token": "class_token",
    "encoder_ln": "encoder.ln",
    "heads_head": "heads.head",
}
POSITION_EMBEDDING = "encoder.pos_embedding"
"""torchvision's ViT holds the position embedding on its encoder, the class token on the model;
one Keras layer (`ClassTokenAndPositions`, named `class_token`) holds both."""
BATCH_NORM_ARRAYS = (
    ("gamma", "weight"),
    ("beta", "bias"),
    ("moving_mean", "running_mean"),
    ("moving_variance", "running_var"),
)
"""Keras' batch-norm variables by torchvision's state names."""


def torchvision_name(name: str) -> str:
    """The module of a layer named as torchvision's with "_" for "." (torchvision's module names
    have no "_")."""
    return name.replace("_", ".")


def densenet_torch_name(name: str) -> str:
    """torchvision's module for a keras.applications DenseNet layer: Keras counts the stages
    from 2 (conv2..conv5, pool2..pool4), torchvision its dense blocks and transitions from 1."""
    if name in DENSENET_FIXED:
        return DENSENET_FIXED[name]
    if match := DENSE_BLOCK_LAYER.fullmatch(name):
        stage, layer, part = match.groups()
        return f"features.denseblock{int(stage) - 1}.denselayer{layer}.{DENSE_LAYER_PARTS[part]}"
    if match := TRANSITION.fullmatch(name):
        stage, part = match.groups()
        return f"features.transition{int(stage) - 1}.{TRANSITION_PARTS[part]}"
    raise UsageError(f"the Keras DenseNet-121 has a layer {name!r} that torchvision's has not")


def vit_torch_name(name: str) -> str:
    """torchvision's module (or, for the class token, parameter) for a ViT layer: its names hold
    "_" of their own (`encoder_layer_0`, `ln_1`), so "_" for "." is undone part by part."""
    if name in VIT_FIXED:
        return VIT_FIXED[name]
    if (match := ENCODER_LAYER.fullmatch(name)) and match.group(2) in ENCODER_LAYER_PARTS:
        index, part = match.groups()
        return f"encoder.layers.encoder_layer_{index}.{ENCODER_LAYER_PARTS[part]}"
    raise UsageError(f"the Keras ViT-B/16 has a layer {name!r} that torchvision's has not")


TORCH_NAMES: dict[str, Callable[[str], str]] = {
    "densenet121": densenet_torch_name,
    "vit_b_16": vit_torch_name,
    "gpt2": gpt2.torch_module,
}
"""How a model's Keras layer names become torchvision's, where `torchvision_name` does not."""


def _assign(variable: keras.Variable, array: np.ndarray) -> None:
    variable.assign(array.astype(np.float32))


def _load_conv(layer: keras.layers.Conv2D, name: str, weights: InitialWeights) -> None:
    """Keras' kernel is HWIO (in either data format), torch's OIHW."""
    height, width, inputs, outputs = layer.kernel.shape
    _assign(layer.kernel, weights.take(f"{name}.weight", (outputs, inputs, height, width)).transpose(2, 3, 1, 0))
    if layer.use_bias:
        _assign(layer.bias, weights.take(f"{name}.bias", (outputs,)))


def _load_dense(layer: keras.layers.Dense, name: str, weights: InitialWeights, separator: str = ".") -> None:
    """Keras' kernel is (in, out), torch's weight (out, in). `separator` joins the name to
    `weight`/`bias` (torch's attention names its input projection `in_proj_weight`)."""
    inputs, outputs = layer.kernel.shape
    _assign(layer.kernel, weights.take(f"{name}{separator}weight", (outputs, inputs)).T)
    if layer.use_bias:
        _assign(layer.bias, weights.take(f"{name}{separator}bias", (outputs,)))


def _load_layer_norm(layer: keras.layers.LayerNormalization, name: str, weights: InitialWeights) -> None:
    _assign(layer.gamma, weights.take(f"{name}.weight", tuple(layer.gamma.shape)))
    _assign(layer.beta, weights.take(f"{name}.bias", tuple(layer.beta.shape)))


def _load_embedding(layer: keras.layers.Embedding | gpt2.PositionEmbedding, name: str, weights: InitialWeights) -> None:
    """An embedding's rows are torch's: (rows, width), the same layout."""
    _assign(layer.embeddings, weights.take(f"{name}.weight", tuple(layer.embeddings.shape)))


def _load_causal_attention(layer: gpt2.CausalSelfAttention, name: str, weights: InitialWeights) -> None:
    """GPT-2's fused q,k,v projection and its output projection, a Dense each as in torch."""
    _load_dense(layer.c_attn, f"{name}.c_attn", weights)
    _load_dense(layer.c_proj, f"{name}.c_proj", weights)


def _load_attention(layer: SelfAttention, name: str, weights: InitialWeights) -> None:
    """torch's fused `in_proj_weight` (3 width, width), q, k, v stacked, is the fused Dense's
    (width, 3 width) kernel transposed, as any Dense's; `out_proj` is a Dense of its own."""
    _load_dense(layer.in_proj, f"{name}.in_proj", weights, separator="_")
    _load_dense(layer.out_proj, f"{name}.out_proj", weights)


def _load_tokens(layer: ClassTokenAndPositions, name: str, weights: InitialWeights) -> None:
    _assign(layer.class_token, weights.take(name, tuple(layer.class_token.shape)))
    _assign(layer.pos_embedding, weights.take(POSITION_EMBEDDING, tuple(layer.pos_embedding.shape)))


def _load_batch_norm(layer: keras.layers.BatchNormalization, name: str, weights: InitialWeights) -> None:
    """A layer without scale or shift (`scale=False`, as in keras.applications' Inception-v3)
    takes no array for it, so weights that have one are left over."""
    for attribute, state in BATCH_NORM_ARRAYS:
        variable = getattr(layer, attribute)
        if variable is not None:
            _assign(variable, weights.take(f"{name}.{state}", tuple(variable.shape)))


LOADERS = {
    keras.layers.Conv2D: _load_conv,
    keras.layers.Dense: _load_dense,
    keras.layers.BatchNormalization: _load_batch_norm,
    keras.layers.LayerNormalization: _load_layer_norm,
    SelfAttention: _load_attention,
    ClassTokenAndPositions: _load_tokens,
    keras.layers.Embedding: _load_embedding,
    gpt2.PositionEmbedding: _load_embedding,
    gpt2.CausalSelfAttention: _load_causal_attention,
}
"""The loader of each kind of layer that holds weights (GPT-2's token embedding is a
`ReversibleEmbedding`, an `Embedding`)."""


def load_initial(model: keras.Model, weights: InitialWeights) -> None:
    """Assign every weight of `model` from the shared arrays (checked by shape); a layer with
    weights of another kind, or an array left over or missing, is one UsageError."""
    torch_name = TORCH_NAMES.get(model.name, torchvision_name)
    for layer in model.layers:
        if not layer.weights:
            continue
        loader = next((load for kind, load in LOADERS.items() if isinstance(layer, kind)), None)
        if loader is None:
            raise UsageError(f"no initial weights for the Keras layer {layer.name!r} ({type(layer).__name__})")
        loader(layer, torch_name(layer.name), weights)
    weights.check_all_taken()


def set_batch_norm(model: keras.Model, hyperparameters: Hyperparameters) -> None:
    """The job's batch-norm settings on every batch-norm layer: Keras' momentum is the weight of
    the old average (1 minus torch's), and keras.applications' epsilon 1.001e-5 becomes the job's."""
    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            layer.momentum = 1.0 - hyperparameters.batch_norm_momentum
            layer.epsilon = hyperparameters.batch_norm_epsilon


def started_model(spec: ModelSpec, config: RunConfig) -> tuple[keras.Model, str | None]:
    """`spec`'s model built for the run, with the job's batch-norm settings and at its starting
    weights (`--init`), and their digest (None: Keras' own initialiser, `--init framework`).
    Every Keras adapter starts its model here, inside whatever scope places its variables."""
    model = models.build_model(spec, config.job.input_size, config.job.data_format)
    set_batch_norm(model, spec.hyperparameters)
    return model, config.job.start_from(spec, partial(load_initial, model))
