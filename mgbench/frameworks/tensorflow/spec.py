"""TensorFlow's custom loop, declared without importing it: the Keras family's models under
MirroredStrategy, staged as keras-tf stages (borrowed from `keras_tf/spec.py`)."""

from __future__ import annotations

from mgbench.frameworks.keras.environment import tensorflow_variables
from mgbench.frameworks.keras.spec import KERAS_MODELS, KERAS_OPTIMIZERS, TF_DATA_DECODES
from mgbench.frameworks.keras_tf.spec import (
    KERAS_TF_STAGING,
    KERAS_TF_UNSTAGED,
    MIRRORED_COMMUNICATION,
    TENSORFLOW_MEMORY,
)
from mgbench.frameworks.specs import Capabilities, Compiler, FrameworkSpec, StrategySpec, with_unstaged_twin

XLA_JIT = Compiler("xla")
"""TensorFlow's `jit_compile=True`: the step compiled by XLA instead of run as a TF graph."""

FRAMEWORK = FrameworkSpec(
    name="tensorflow",
    module="mgbench.frameworks.tensorflow.adapter",
    strategies=(
        *with_unstaged_twin(
            StrategySpec(
                "mirrored",
                "inprocess",
                f"custom loop: tf.function + strategy.run under MirroredStrategy; {KERAS_TF_STAGING}",
                communication=MIRRORED_COMMUNICATION,
            ),
            KERAS_TF_UNSTAGED,
        ),
    ),
    import_names=("keras", "tensorflow"),
    environment="keras-tf",
    install_hint="make env-keras-tf (or: mgbench setup tensorflow)",
    environment_variables=tensorflow_variables,
    capabilities=Capabilities(
        KERAS_MODELS, loader="tf.data", compiler=XLA_JIT, no_gpu_decoder=TF_DATA_DECODES, optimizers=KERAS_OPTIMIZERS
    ),
    memory=TENSORFLOW_MEMORY,
)
