"""Horovod over PyTorch, declared without importing it: PyTorch's models, loader and compiler
(borrowed from `pytorch/spec.py`) with Horovod's all-reduce."""

from __future__ import annotations

from mgbench.core.collectives import gradient_all_reduce
from mgbench.frameworks.exchange import HOROVOD_EXCHANGE
from mgbench.frameworks.pytorch.spec import TORCH_CAPABILITIES, TORCH_MEMORY
from mgbench.frameworks.specs import FrameworkSpec, StrategySpec

FRAMEWORK = FrameworkSpec(
    name="horovod",
    module="mgbench.frameworks.horovod.adapter",
    strategies=(
        StrategySpec(
            "hvd",
            "horovodrun",
            "Horovod over PyTorch: DistributedOptimizer all-reduce, one process per device (NCCL on GPU, gloo "
            "on CPU); input staged as pytorch's ddp (torch's DataLoader, side-stream copy on GPU)",
            communication=gradient_all_reduce(
                "horovod.torch.DistributedOptimizer: a replica per process, each gradient handed to the "
                "all-reduce by its hook as the backward computes it"
            ),
            exchange=HOROVOD_EXCHANGE,
        ),
    ),
    import_names=("horovod", "torch", "torchvision"),
    environment="horovod",
    packages_from="pytorch",
    install_hint="make env-horovod (builds Horovod 0.28.1 from source against torch: ~7 min on 2 cores, once)",
    post_install="scripts/build_horovod.sh",
    capabilities=TORCH_CAPABILITIES,
    memory=TORCH_MEMORY,
)
