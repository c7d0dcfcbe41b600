"""The catalogue models, loss, optimizer and precision in Keras 3, for every Keras backend.

Shared by keras-tf, keras-jax, keras-torch and tensorflow, so all four train exactly the same
job. This module imports Keras only (never TensorFlow or JAX directly): the backend was
chosen by KERAS_BACKEND before import (`mgbench.frameworks.keras.environment`).

Parameter counts against the torchvision architectures (trainable parameters):
- densenet121 (14 outputs): 6,968,206, equal.
- resnet50: 25,557,032, equal: written here as torchvision's v1.5 (`resnet50`), since
  keras.applications' ResNet50 is v1 (the stride in a block's first 1x1 convolution) and gives
  every convolution a bias.
- inception_v3 (no auxiliary head): 23,817,352 = torchvision's 23,834,568 - 17,216, because
  keras.applications' InceptionV3 uses batch-norm with scale=False (no gamma, 17,216 channels).
- tiny: 5,418, equal.
- vit_b_16: torchvision's `VisionTransformer` written in Keras layers (`transformer.py`), equal
  at every image size (its position embedding has a row per patch).
- gpt2, gpt2-medium, gpt2-xl, gpt2-tiny: one builder, `gpt2` (`gpt2.py`), reading the shape
  (`ModelSpec.language_model`), equal to the PyTorch module's arrays at every sequence length.

The layers that hold weights are named so that the shared initial weights (`weights.py`, in
torchvision's names) map onto them simply: `tiny`, `resnet50` and `vit_b_16` carry torchvision's names
("_" for "."; `weights.vit_torch_name` restores ViT's own "_"), DenseNet-121 keeps
keras.applications' names (`weights.densenet_torch_name`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import keras
import numpy as np

from mgbench.core.architectures import DenseNet
from mgbench.core.config import RunConfig
from mgbench.core.errors import UsageError
from mgbench.core.kinds import DataFormat
from mgbench.core.models import ModelSpec
from mgbench.core.optimization import SGD, AdamW, Optimizer
from mgbench.frameworks.keras.gpt2 import NextTokenCrossentropy, build_gpt2
from mgbench.frameworks.keras.spec import KERAS_MODELS
from mgbench.frameworks.keras.transformer import ClassTokenAndPositions, encoder_block

PRECISION_POLICIES = {"fp32": "float32", "bf16": "mixed_bfloat16", "fp16": "mixed_float16"}


def require_backend(framework: str, backend: str) -> None:
    """Refuses (one line) to run `framework` on a Keras that imported another backend: Keras reads
    KERAS_BACKEND once, at its import, and a model built on the wrong one fails far from here."""
    if keras.backend.backend() != backend:
        raise UsageError(f"{framework} needs KERAS_BACKEND={backend}, Keras runs on {keras.backend.backend()}")


def set_precision(precision: str) -> None:
    """Global dtype policy; must be set before the model is built (layers read it then)."""
    keras.mixed_precision.set_global_policy(PRECISION_POLICIES[precision])


def tiny(spec: ModelSpec, input_shape: tuple[int, int, int]) -> keras.Model:
    """The catalogue's `tiny` (`SmallConvNet`), the layers with weights named by their index in
    torch's `nn.Sequential` (0, 3, 7)."""
    first, second = spec.convnet.channels
    return keras.Sequential(
        [
            keras.Input(input_shape),
            keras.layers.Conv2D(first, 3, padding="same", activation="relu", name="0"),
            keras.layers.MaxPooling2D(2),
            keras.layers.Conv2D(second, 3, padding="same", activation="relu", name="3"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(spec.num_classes, name="7"),
        ],
        name="tiny",
    )


def _channel_axis() -> int:
    return -1 if keras.config.image_data_format() == "channels_last" else 1


def _conv(x: keras.KerasTensor, filters: int, kernel: int, stride: int, name: str) -> keras.KerasTensor:
    """torch's bias-free Conv2d padded kernel // 2 on every side. Keras' "same" pads a strided
    convolution of an even size on the bottom and right only, so a strided one is zero-padded
    explicitly and then "valid"; unstrided, "same" is that symmetric padding."""
    padding = "same"
    if stride > 1 and kernel > 1:
        x = keras.layers.ZeroPadding2D(kernel // 2, name=f"{name}_pad")(x)
        padding = "valid"
    return keras.layers.Conv2D(filters, kernel, strides=stride, padding=padding, use_bias=False, name=name)(x)


def _batch_norm(x: keras.KerasTensor, name: str) -> keras.KerasTensor:
    return keras.layers.BatchNormalization(axis=_channel_axis(), name=name)(x)


def _bottleneck(
    x: keras.KerasTensor, width: int, out_channels: int, stride: int, project: bool, prefix: str
) -> keras.KerasTensor:
    """torchvision's Bottleneck (v1.5: the stride in the 3x3 convolution); the first block of a
    stage projects its input (`downsample`, `project`) with the same stride."""
    y = keras.layers.ReLU()(_batch_norm(_conv(x, width, 1, 1, f"{prefix}_conv1"), f"{prefix}_bn1"))
    y = keras.layers.ReLU()(_batch_norm(_conv(y, width, 3, stride, f"{prefix}_conv2"), f"{prefix}_bn2"))
    y = _batch_norm(_conv(y, out_channels, 1, 1, f"{prefix}_conv3"), f"{prefix}_bn3")
    if project:
        x = _batch_norm(_conv(x, out_channels, 1, stride, f"{prefix}_downsample_0"), f"{prefix}_downsample_1")
    return keras.layers.ReLU()(keras.layers.Add()([y, x]))


def resnet50(spec: ModelSpec, input_shape: tuple[int, int, int]) -> keras.Model:
    """torchvision's ResNet (v1.5) at the catalogue's shape (`spec.convnet`), its layers named as
    torchvision's modules with "_" for "." (Keras over PyTorch registers each variable under its
    path, where torch refuses a ".")."""
    shape = spec.convnet
    inputs = keras.Input(input_shape)
    x = keras.layers.ReLU()(_batch_norm(_conv(inputs, shape.stem_channels, 7, 2, "conv1"), "bn1"))
    # torch pads the max-pool with -inf; after the ReLU a zero pad never wins either.
    x = keras.layers.MaxPooling2D(3, 2)(keras.layers.ZeroPadding2D(1, name="maxpool_pad")(x))
    for stage, blocks in enumerate(shape.stages, start=1):
        width = shape.width(stage)
        for block in range(blocks):
            stride = 2 if block == 0 and stage > 1 else 1
            x = _bottleneck(x, width, width * shape.expansion, stride, block == 0, f"layer{stage}_{block}")
    x = keras.layers.GlobalAveragePooling2D()(x)
    return keras.Model(inputs, keras.layers.Dense(spec.num_classes, name="fc")(x), name="resnet50")


def vit_b_16(spec: ModelSpec, input_shape: tuple[int, int, int]) -> keras.Model:
    """torchvision's ViT-B/16 at the catalogue's shape (`spec.transformer`): 16-px patches
    embedded by a strided convolution, then tokens in torch's order (row-major patches, the
    class token first) in either data format, the encoder blocks, a final layer norm, and the
    head on the class token."""
    shape = spec.transformer
    inputs = keras.Input(input_shape)
    patches = keras.layers.Conv2D(shape.width, shape.patch_size, strides=shape.patch_size, name="conv_proj")(inputs)
    if _channel_axis() == 1:
        patches = keras.layers.Permute((2, 3, 1))(patches)
    tokens = ClassTokenAndPositions(name="class_token")(keras.layers.Reshape((-1, shape.width))(patches))
    for index in range(shape.layers):
        tokens = encoder_block(tokens, shape, f"encoder_layers_encoder_layer_{index}")
    tokens = keras.layers.LayerNormalization(epsilon=shape.layer_norm_epsilon, name="encoder_ln")(tokens)
    logits = keras.layers.Dense(spec.num_classes, name="heads_head")(tokens[:, 0])
    return keras.Model(inputs, logits, name="vit_b_16")


def application(architecture: Callable[..., keras.Model]) -> Callable[[ModelSpec, tuple[int, int, int]], keras.Model]:
    """A keras.applications architecture with random weights, emitting logits."""
    return lambda spec, input_shape: architecture(
        weights=None, input_shape=input_shape, classes=spec.num_classes, classifier_activation=None
    )


KERAS_DENSENETS = {
    DenseNet(blocks=(6, 12, 24, 16)): keras.applications.DenseNet121,
    DenseNet(blocks=(6, 12, 32, 32)): keras.applications.DenseNet169,
    DenseNet(blocks=(6, 12, 48, 32)): keras.applications.DenseNet201,
}
"""keras.applications' DenseNets by their shape: Keras builds these only (its growth, bottleneck
and stem are torchvision's, fixed)."""


def densenet121(spec: ModelSpec, input_shape: tuple[int, int, int]) -> keras.Model:
    """keras.applications' DenseNet of the catalogue's shape (`spec.convnet`)."""
    if spec.convnet not in KERAS_DENSENETS:
        raise UsageError(f"keras.applications has no DenseNet of {spec.name}'s shape {spec.convnet}")
    return application(KERAS_DENSENETS[spec.convnet])(spec, input_shape)


inception_v3 = application(keras.applications.InceptionV3)
"""The catalogue models `spec.py` declares (`KERAS_MODELS`), each built by the callable of its
name here from its catalogue entry and input shape (`tiny` and `resnet50` above)."""


def gpt2(spec: ModelSpec, seq_len: int) -> keras.Model:
    """Every GPT-2 size of the catalogue (its family, `ModelSpec.family`), at its shape
    (`spec.language_model`) for sequences of `seq_len` tokens, initialised from Keras' global seed
    as the image builders' layers are (`data.keras_task` seeds it with the job's)."""
    return build_gpt2(spec.language_model, None, seq_len)


def build_model(spec: ModelSpec, input_size: int, data_format: DataFormat | None) -> keras.Model:
    """The architecture for `spec`, built for its input (`input_size` px in `data_format`, or
    `input_size` tokens), emitting logits.

    Logits rather than probabilities because every loss takes `from_logits=True` (as the
    torch adapter's BCEWithLogits/CrossEntropy do): numerically safer under mixed precision.
    Under a mixed policy the logits come in the compute dtype; the loss casts them to float32,
    as the torch adapter does with `.float()`.
    """
    builder = KERAS_MODELS.builder(spec.name, "the Keras family")
    if not spec.input.has_layout:
        return builder(spec, input_size)
    keras.config.set_image_data_format(data_format)
    input_shape = (input_size, input_size, 3) if data_format.channels_last else (3, input_size, input_size)
    return builder(spec, input_shape)


LOSSES: dict[str, type[keras.losses.Loss]] = {
    "sigmoid": keras.losses.BinaryCrossentropy,
    "softmax": keras.losses.SparseCategoricalCrossentropy,
    "next_token": NextTokenCrossentropy,
}
"""Keras' loss for each declared loss kind (`core.objective.LossKind`), taking logits."""


def build_loss(spec: ModelSpec, reduction: str = "sum_over_batch_size") -> keras.losses.Loss:
    return LOSSES[spec.objective.loss](from_logits=True, reduction=reduction)


class TorchFormSGD(keras.optimizers.SGD):
    """SGD with momentum stepping as torch's does: b = m b + g; w -= lr b (Nesterov: w -= lr (g + m b)).

    Keras' own keeps the rate inside the velocity (v = m v - lr g; w += v), which gives the same
    steps only while the rate is constant; the job changes it every step of its warm-up
    (`core/optimization.py`), after which Keras' form would have stepped by other amounts and its
    run would drift from every other framework's. Weight decay is torch's too: added to the
    gradient before the momentum (`coupled_decay`), where Keras' own `weight_decay` decays the
    weights apart from the step."""

    def __init__(self, coupled_decay: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.coupled_decay = coupled_decay

    def update_step(self, gradient: Any, variable: Any, learning_rate: Any) -> None:
        learning_rate = keras.ops.cast(learning_rate, variable.dtype)
        gradient = keras.ops.cast(gradient, variable.dtype)
        if self.coupled_decay:
            gradient = keras.ops.add(gradient, keras.ops.multiply(variable, self.coupled_decay))
        if self.momentum == 0:
            self.assign_sub(variable, keras.ops.multiply(gradient, learning_rate))
            return
        momentum = keras.ops.cast(self.momentum, variable.dtype)
        buffer = self.momentums[self._get_variable_index(variable)]
        self.assign(buffer, keras.ops.add(keras.ops.multiply(buffer, momentum), gradient))
        step = keras.ops.add(gradient, keras.ops.multiply(buffer, momentum)) if self.nesterov else buffer
        self.assign_sub(variable, keras.ops.multiply(step, learning_rate))


def sgd(learning_rate: float, declared: SGD) -> TorchFormSGD:
    return TorchFormSGD(
        declared.weight_decay, learning_rate=learning_rate, momentum=declared.momentum, nesterov=declared.nesterov
    )


class TorchFormAdamW(keras.optimizers.AdamW):
    """AdamW stepping as torch.optim.AdamW does: w -= lr wd w (Keras' own decoupled decay, on every
    variable, before the step), then m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2 and
    w -= lr / (1 - b1^t) m / (sqrt(v) / sqrt(1 - b2^t) + eps).

    Keras' own Adam adds epsilon to sqrt(v) before the second moment's bias correction
    (w -= lr sqrt(1 - b2^t) / (1 - b1^t) m / (sqrt(v) + eps): the Adam paper's "epsilon hat"), which
    is torch's form with epsilon shrunk by sqrt(1 - b2^t), a tenth at GPT-2's beta2 of 0.95 on the
    first step: where a gradient is as small as epsilon, Keras' run would step elsewhere."""

    def update_step(self, gradient: Any, variable: Any, learning_rate: Any) -> None:
        dtype = variable.dtype
        learning_rate = keras.ops.cast(learning_rate, dtype)
        gradient = keras.ops.cast(gradient, dtype)
        step = keras.ops.cast(self.iterations + 1, dtype)
        first_correction = 1 - keras.ops.power(keras.ops.cast(self.beta_1, dtype), step)
        second_correction = 1 - keras.ops.power(keras.ops.cast(self.beta_2, dtype), step)
        index = self._get_variable_index(variable)
        first, second = self._momentums[index], self._velocities[index]
        self.assign(
            first, keras.ops.add(keras.ops.multiply(first, self.beta_1), keras.ops.multiply(gradient, 1 - self.beta_1))
        )
        self.assign(
            second,
            keras.ops.add(
                keras.ops.multiply(second, self.beta_2), keras.ops.multiply(keras.ops.square(gradient), 1 - self.beta_2)
            ),
        )
        denominator = keras.ops.add(
            keras.ops.divide(keras.ops.sqrt(second), keras.ops.sqrt(second_correction)), self.epsilon
        )
        step_size = keras.ops.divide(learning_rate, first_correction)
        self.assign_sub(variable, keras.ops.multiply(keras.ops.divide(first, denominator), step_size))


def adamw(learning_rate: float, declared: AdamW) -> TorchFormAdamW:
    return TorchFormAdamW(
        learning_rate=learning_rate,
        weight_decay=declared.weight_decay,
        beta_1=declared.betas[0],
        beta_2=declared.betas[1],
        epsilon=declared.eps,
    )


OPTIMIZERS: dict[str, Callable[[float, Any], keras.optimizers.Optimizer]] = {SGD.kind: sgd, AdamW.kind: adamw}
"""Keras' optimizer for each declared kind stepping as torch's does: the kinds the Keras family's
specs declare it builds (`Capabilities.optimizers`)."""


def build_optimizer(config: RunConfig) -> keras.optimizers.Optimizer:
    """The model's declared optimizer (`ModelSpec.optimization`) at the job's rate; under fp16
    wrapped in dynamic loss scaling, as Keras' compile does."""
    declared: Optimizer = config.job.spec.optimization.optimizer
    optimizer = OPTIMIZERS[declared.kind](config.job.learning_rate, declared)
    if config.job.precision == "fp16":
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    return optimizer


def trainable_parameters(model: keras.Model) -> int:
    return int(sum(np.prod(v.shape) for v in model.trainable_weights))


def save_trainable_weights(model: keras.Model, path: Path) -> None:
    """An .npz of the trainable weights keyed by variable path, in float32."""
    arrays = {
        v.path: np.asarray(keras.ops.convert_to_numpy(v.value), dtype=np.float32) for v in model.trainable_weights
    }
    np.savez(path, **arrays)
