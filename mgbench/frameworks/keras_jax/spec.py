"""Keras 3 over JAX, declared without importing either: data-parallel or fully sharded (jax-fsdp) over the
devices of one process."""

from __future__ import annotations

from mgbench.core.collectives import (
    Collective,
    CollectiveKind,
    Communication,
    Phase,
    Sharding,
    Tensors,
    gradient_all_reduce,
)
from mgbench.frameworks.exchange import ONE_PROCESS_PER_NODE, XLA_COMBINE_THRESHOLD_BYTES, XLA_EXCHANGE, Exchange
from mgbench.frameworks.keras.environment import jax_variables
from mgbench.frameworks.keras.spec import KERAS_FAMILY, KERAS_MODELS, KERAS_OPTIMIZERS
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
"""What every keras-jax data-parallel strategy moves each step."""

XLA_FULL_SHARD = Communication(
    Sharding.PARAMETERS,
    (
        Collective(CollectiveKind.ALL_GATHER, Tensors.PARAMETERS, Phase.FORWARD),
        Collective(CollectiveKind.REDUCE_SCATTER, Tensors.GRADIENTS, Phase.BACKWARD),
    ),
    "JAX: keras.distribution.ModelParallel shards each large weight and its optimizer slots along the batch's "
    "axis (jax-fsdp); XLA's SPMD partitioner gathers each weight once, in the forward, and keeps it for the "
    "backward (a convolution's kernel is gathered again, reversed, for its input gradient), and reduces each "
    "gradient onto its shard (on GPU a reduce-scatter, made by XLA's reduce-scatter creator; XLA's CPU compiler "
    "keeps an all-reduce and slices it)",
)
"""What jax-fsdp moves each step: every weight, though the smallest (biases, norms) stay replicated
and are all-reduced, a share of the bytes too small to declare. It shards the parameters between
steps (the held state); inside a step a weight gathered once serves forward and backward, as
FSDP's SHARD_GRAD_OP, which `Sharding.GRADIENTS` names, keeps them: one gather, not FULL_SHARD's two."""

XLA_SHARDED_EXCHANGE = Exchange(
    "XLA combined all-gathers and reduce-scatters",
    XLA_COMBINE_THRESHOLD_BYTES,
    overlapped=False,
    source="XLA on GPU: one all-gather per sharded weight and one reduce-scatter per gradient, combined by "
    "AllGatherCombiner and ReduceScatterCombiner up to xla_gpu_all_gather_combine_threshold_bytes and "
    "xla_gpu_reduce_scatter_combine_threshold_bytes (30 MiB each, as the all-reduces'); with the latency-hiding "
    "scheduler off nothing prices hiding them, as for XLA_EXCHANGE",
    tensors_per_bucket=256,
)
"""How jax-fsdp issues its collectives."""

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
        StrategySpec(
            "jax-fsdp",
            "inprocess",
            "Keras 3 over JAX, keras.distribution.ModelParallel with a LayoutMap sharding every large weight and its "
            "optimizer slots along the batch's axis: jax-dp's step, the weights gathered where used and the gradients "
            "reduce-scattered by XLA; batches sharded onto the devices one step ahead",
            communication=XLA_FULL_SHARD,
            exchange=XLA_SHARDED_EXCHANGE,
            dispatch=ONE_PROCESS_PER_NODE,
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
        optimizers=KERAS_OPTIMIZERS,
    ),
    # torch's too: with --decode gpu torchvision decodes in the same process.
    memory=DeviceMemory((XLA_OOM, TORCH_OOM), cap=XLA_CAP),
)
