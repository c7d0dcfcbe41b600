"""Run inside a Keras environment by tests/test_keras.py: parameter counts of the catalogue
models as the Keras family builds them, and the pieces that could differ from torchvision.

Prints JSON: trainable parameters per model, the biases of ResNet-50's convolutions (none, as
torchvision's), and the batch-norm channels of Inception-v3 that have no scale (gamma).

    KERAS_BACKEND=jax python tests/keras_parameter_probe.py
"""

import json

import keras
import numpy as np

from mgbench.common.kinds import DataFormat
from mgbench.common.models import MODELS
from mgbench.frameworks.keras.models import build_model, trainable_parameters


def main() -> None:
    models = {name: build_model(spec, spec.image_size, DataFormat.CHANNELS_LAST) for name, spec in MODELS.items()}
    resnet_conv_biases = sum(
        int(np.prod(layer.bias.shape))
        for layer in models["resnet50"].layers
        if isinstance(layer, keras.layers.Conv2D) and layer.use_bias
    )
    inception_unscaled = sum(
        int(np.prod(layer.beta.shape))
        for layer in models["inception_v3"].layers
        if isinstance(layer, keras.layers.BatchNormalization) and not layer.scale
    )
    print(
        json.dumps(
            {
                "parameters": {name: trainable_parameters(model) for name, model in models.items()},
                "resnet50_conv_biases": resnet_conv_biases,
                "inception_v3_unscaled_batchnorm_channels": inception_unscaled,
            }
        )
    )


if __name__ == "__main__":
    main()
