"""The catalogue models, loss, optimizer and precision in Keras 3, for every Keras backend.

Shared by keras-tf, keras-jax, keras-torch and tensorflow, so all four train exactly the same
job. This module imports Keras only (never TensorFlow or JAX directly): the backend was
chosen by KERAS_BACKEND before import (`mgbench.frameworks.keras.environment`).

Parameter counts against the torchvision architectures (trainable parameters):
- densenet121 (14 outputs): 6,968,206, equal.
- resnet50: 25,583,592 = torchvision's 25,557,032 + 26,560, because keras.applications' ResNet50
  gives every convolution a bias (use_bias=True before each batch-norm); torchvision's have none.
- inception_v3 (no auxiliary head): 23,817,352 = torchvision's 23,834,568 - 17,216, because
  keras.applications' InceptionV3 uses batch-norm with scale=False (no gamma, 17,216 channels).
- tiny: 5,418, equal.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import keras
import numpy as np

from mgbench.common.config import MOMENTUM, RunConfig
from mgbench.common.kinds import DataFormat
from mgbench.common.models import ModelSpec
from mgbench.frameworks.keras.spec import KERAS_MODELS

PRECISION_POLICIES = {"fp32": "float32", "bf16": "mixed_bfloat16", "fp16": "mixed_float16"}


def set_precision(precision: str) -> None:
    """Global dtype policy; must be set before the model is built (layers read it then)."""
    keras.mixed_precision.set_global_policy(PRECISION_POLICIES[precision])


def tiny(input_shape: tuple[int, int, int], classes: int) -> keras.Model:
    return keras.Sequential(
        [
            keras.Input(input_shape),
            keras.layers.Conv2D(16, 3, padding="same", activation="relu"),
            keras.layers.MaxPooling2D(2),
            keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(classes),
        ],
        name="tiny",
    )


def application(architecture: Callable[..., keras.Model]) -> Callable[[tuple[int, int, int], int], keras.Model]:
    """A keras.applications architecture with random weights, emitting logits."""
    return lambda input_shape, classes: architecture(
        weights=None, input_shape=input_shape, classes=classes, classifier_activation=None
    )


densenet121 = application(keras.applications.DenseNet121)
resnet50 = application(keras.applications.ResNet50)
inception_v3 = application(keras.applications.InceptionV3)
"""The catalogue models `spec.py` declares (`KERAS_MODELS`), each built by the callable of its
name here from its input shape and number of outputs (`tiny` above)."""


def build_model(spec: ModelSpec, image_size: int, data_format: DataFormat) -> keras.Model:
    """The architecture for `spec`, built for its input shape in `data_format`, emitting logits.

    Logits rather than probabilities because both losses take `from_logits=True` (as the
    torch adapter's BCEWithLogits/CrossEntropy do): numerically safer under mixed precision.
    Under a mixed policy the logits come in the compute dtype; the loss casts them to float32,
    as the torch adapter does with `.float()`.
    """
    keras.config.set_image_data_format(data_format)
    input_shape = (image_size, image_size, 3) if data_format.channels_last else (3, image_size, image_size)
    return KERAS_MODELS.builder(spec.name, "the Keras family")(input_shape, spec.num_classes)


def build_loss(spec: ModelSpec, reduction: str = "sum_over_batch_size") -> keras.losses.Loss:
    if spec.loss == "sigmoid":
        return keras.losses.BinaryCrossentropy(from_logits=True, reduction=reduction)
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=reduction)


def build_optimizer(config: RunConfig) -> keras.optimizers.Optimizer:
    """SGD with momentum; under fp16 wrapped in dynamic loss scaling, as Keras' compile does."""
    optimizer = keras.optimizers.SGD(learning_rate=config.learning_rate, momentum=MOMENTUM)
    if config.precision == "fp16":
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
