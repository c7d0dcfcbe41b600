"""Keras 3 over PyTorch, declared without importing either: the Keras family's models in PyTorch's
DDP, compiled by torch.compile and decoding JPEGs on the GPU with PyTorch's decoder (both
borrowed from `pytorch/spec.py`)."""

from __future__ import annotations

from mgbench.frameworks.exchange import DDP_EXCHANGE
from mgbench.frameworks.keras.environment import torch_variables
from mgbench.frameworks.keras.spec import KERAS_FAMILY, KERAS_MODELS
from mgbench.frameworks.memory import TORCH_CAP, TORCH_OOM, DeviceMemory, GpuBatch
from mgbench.frameworks.pytorch.spec import DDP_COMMUNICATION, NVJPEG, TORCH_CAPABILITIES, TORCH_COMPILE
from mgbench.frameworks.specs import Capabilities, FrameworkSpec, StrategySpec, with_unstaged_twin

FRAMEWORK = FrameworkSpec(
    name="keras-torch",
    module="mgbench.frameworks.keras_torch.adapter",
    strategies=(
        *with_unstaged_twin(
            StrategySpec(
                "ddp",
                "torchrun",
                "Keras 3 over PyTorch: the Keras model (a torch.nn.Module) in DistributedDataParallel, "
                "one process per device, custom loop (Keras' torch backend has no keras.distribution); "
                "staged: on GPUs each batch copied from pinned memory on a side stream one step ahead",
                communication=DDP_COMMUNICATION,
                exchange=DDP_EXCHANGE,
            ),
            "each batch copied to the device with a plain .to(device) when the step takes it",
        ),
    ),
    import_names=("keras", "torch"),
    environment="keras-torch",
    packages_from="pytorch",
    install_hint="make env-keras-torch (or: pip install -r requirements/keras-torch.txt)",
    environment_variables=torch_variables,
    default_strategies=("ddp",),
    family=KERAS_FAMILY,
    capabilities=Capabilities(
        KERAS_MODELS,
        loader="keras.utils.PyDataset",
        profiler="torch.profiler",
        compiler=TORCH_COMPILE,
        gpu_decoder=NVJPEG,
        optimizers=TORCH_CAPABILITIES.optimizers,
    ),
    memory=DeviceMemory(
        (TORCH_OOM,),
        gpu_batches={
            "densenet121": GpuBatch(
                128, "at 256 its DenseNet-121 needs more than an 80 GB GPU holds (docs/measurement.md, The default job)"
            )
        },
        cap=TORCH_CAP,
    ),
)
