"""Keras 3 over TensorFlow, declared without importing either: Keras' compiled step under
tf.distribute; what the tensorflow loop shares with it (staging, its text) is borrowed from here."""

from __future__ import annotations

from mgbench.core.collectives import Phase, gradient_all_reduce, reduce_and_broadcast
from mgbench.frameworks.keras.environment import tensorflow_variables
from mgbench.frameworks.keras.spec import KERAS_FAMILY, KERAS_MODELS, KERAS_OPTIMIZERS, TF_DATA_DECODES
from mgbench.frameworks.memory import TENSORFLOW_CAP, TENSORFLOW_OOM, XLA_OOM, DeviceMemory
from mgbench.frameworks.specs import Capabilities, Compiler, FrameworkSpec, StrategySpec, with_unstaged_twin

KERAS_XLA = Compiler(
    "xla",
    one_device_note="Keras compiles its whole step, the update of the variables mirrored on every device "
    "included, as one XLA function, which cannot reach the variables' copies on other devices",
)
"""Keras' `jit_compile=True` under tf.distribute (why its `"auto"` leaves XLA off there)."""
CENTRAL_STORAGE_NO_COMPILE = (
    "the variables live on the CPU and the step on the devices, and an XLA-compiled step cannot "
    "read variables held on another device"
)
KERAS_TF_STAGING = (
    "staged: the input pipeline (the synthetic pool, or tf.data over the dataset) distributed by the "
    "strategy and prefetched into each replica's device"
)
KERAS_TF_UNSTAGED = "host batches sliced per replica and copied inside the step"
"""How keras-tf's unstaged twins (and the tensorflow loop's) feed the replicas."""
TENSORFLOW_MEMORY = DeviceMemory((TENSORFLOW_OOM, XLA_OOM), cap=TENSORFLOW_CAP)
"""How TensorFlow runs out of GPU memory (in its own kernels or, with `--compile`, XLA's) and is capped."""
MIRRORED_COMMUNICATION = gradient_all_reduce(
    "tf.distribute.MirroredStrategy: the variables mirrored on every device; the optimizer all-reduces every "
    "replica's gradients together once the backward has computed them all, before the update (on GPUs "
    "NcclAllReduce, all of them packed into one message: num_packs=1)",
    Phase.AFTER_BACKWARD,
)
"""What MirroredStrategy moves each step, under Keras' step and the tensorflow loop alike."""
CENTRAL_STORAGE_COMMUNICATION = reduce_and_broadcast(
    "tf.distribute.experimental.CentralStorageStrategy: the variables live on the CPU, every replica reads them "
    "onto its device each step and their gradients are summed onto the CPU, which updates them; both cross "
    "the host's links, which a bus bandwidth measured between devices prices only roughly"
)

FRAMEWORK = FrameworkSpec(
    name="keras-tf",
    module="mgbench.frameworks.keras_tf.adapter",
    strategies=(
        *with_unstaged_twin(
            StrategySpec(
                "mirrored",
                "inprocess",
                f"Keras 3 over TF, tf.distribute.MirroredStrategy; {KERAS_TF_STAGING}",
                communication=MIRRORED_COMMUNICATION,
            ),
            KERAS_TF_UNSTAGED,
        ),
        *with_unstaged_twin(
            StrategySpec(
                "central-storage",
                "inprocess",
                f"variables on the CPU, compute mirrored on the devices (parameter server on CPU); {KERAS_TF_STAGING}",
                no_compile_note=CENTRAL_STORAGE_NO_COMPILE,
                communication=CENTRAL_STORAGE_COMMUNICATION,
            ),
            KERAS_TF_UNSTAGED,
        ),
    ),
    import_names=("keras", "tensorflow"),
    environment="keras-tf",
    install_hint="make env-keras-tf (or: mgbench setup keras-tf)",
    environment_variables=tensorflow_variables,
    default_strategies=("mirrored",),
    family=KERAS_FAMILY,
    capabilities=Capabilities(
        KERAS_MODELS, loader="tf.data", compiler=KERAS_XLA, no_gpu_decoder=TF_DATA_DECODES, optimizers=KERAS_OPTIMIZERS
    ),
    memory=TENSORFLOW_MEMORY,
)
