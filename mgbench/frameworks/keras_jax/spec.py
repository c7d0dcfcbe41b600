"""Keras 3 over JAX, declared without importing either: data-parallel over the devices of one process."""

from __future__ import annotations

from mgbench.core.collectives import gradient_all_reduce
from mgbench.frameworks.exchange import ONE_PROCESS_PER_NODE, XLA_EXCHANGE
from mgbench.frameworks.keras.environment import jax_variables
from mgbench.frameworks.keras.spec import KERAS_FAMILY, KERAS_MODELS
from mgbench.frameworks.memory import TORCH_OOM, XLA_CAP, XLA_OOM, DeviceMemory
from mgbench.frameworks.pytorch.spec import NVJPEG
from mgbench.frameworks.specs import Capabilities, Compiler, FrameworkSpec, StrategySpec, with_unstaged_twin

HANDED_TO_JAX = "handed to JAX by DLPack"
TORCHVISION_BY_DLPACK = f"{NVJPEG}, {HANDED_TO_JAX}"
"""JAX has no JPEG decoder: with `--decode gpu` torchvision decodes on the GPU JAX trains on
(`device_decode.py`): the torch of the pytorch environment, which this one sees beneath its own
(`packages_from`), so no second copy of torch and its CUDA libraries is installed."""

XLA_COMMUNICATION = gradient_all_reduce(
    "JAX: the parameters replicated on every device, the gradients all-reduced inside the compiled step "
    "(keras.distribution.DataParallel's sharding has XLA's SPMD partitioner insert it; jax-shard-map's pmean "
    "is one)"
)
"""What every keras-jax strategy moves each step."""

FRAMEWORK = FrameworkSpec(
    name="keras-jax",
    module="mgbench.frameworks.keras_jax.adapter",
    strategies=(
        StrategySpec(
            "jax-dp",
            "inprocess",
            "Keras 3 over JAX, keras.distribution.DataParallel: Keras' jitted step on a held state, "
            "batches sharded onto the devices one step ahead",
            communication=XLA_COMMUNICATION,
            exchange=XLA_EXCHANGE,
            dispatch=ONE_PROCESS_PER_NODE,
        ),
        StrategySpec(
            "jax-dp-on-batch",
            "inprocess",
            "as jax-dp, but model.train_on_batch on the pre-sharded batches (variables synced every step)",
            communication=XLA_COMMUNICATION,
            exchange=XLA_EXCHANGE,
            dispatch=ONE_PROCESS_PER_NODE,
        ),
        *with_unstaged_twin(
            StrategySpec(
                "jax-shard-map",
                "inprocess",
                "Keras 3 over JAX, one device's step mapped over the devices with jax.shard_map: local "
                "batch-norm statistics as in DDP (jax-dp's DataParallel syncs them), gradients averaged by pmean; "
                "staged: each batch sharded onto the devices one step ahead, from page-locked host memory",
                communication=XLA_COMMUNICATION,
                exchange=XLA_EXCHANGE,
                dispatch=ONE_PROCESS_PER_NODE,
            ),
            "each batch sharded onto the devices from host arrays when the step takes it",
        ),
    ),
    import_names=("keras", "jax"),
    environment="keras-jax",
    packages_from="pytorch",
    install_hint="make env-keras-jax (or: pip install -r requirements/keras-jax.txt)",
    environment_variables=jax_variables,
    default_strategies=("jax-shard-map",),
    family=KERAS_FAMILY,
    capabilities=Capabilities(
        KERAS_MODELS,
        loader="keras.utils.PyDataset",
        profiler="jax.profiler",
        compiler=Compiler("xla", always=True),
        gpu_decoder=TORCHVISION_BY_DLPACK,
    ),
    # torch's too: with --decode gpu torchvision decodes in the same process.
    memory=DeviceMemory((XLA_OOM, TORCH_OOM), cap=XLA_CAP),
)
