"""Chainer, declared without importing it: ChainerMN, one MPI process per device."""

from __future__ import annotations

from mgbench.core.collectives import Phase, gradient_all_reduce
from mgbench.frameworks.memory import CUPY_CAP, CUPY_OOM, DeviceMemory
from mgbench.frameworks.specs import Capabilities, FrameworkSpec, ModelBuilders, StrategySpec

CHAINER_MODELS = ModelBuilders("mgbench.frameworks.chainer.models", ("densenet121", "resnet50", "vit_b_16", "tiny"))
"""torchvision's architectures rebuilt from chainer.links and chainer.functions (no Inception-v3)."""

FRAMEWORK = FrameworkSpec(
    name="chainer",
    module="mgbench.frameworks.chainer.adapter",
    strategies=(
        StrategySpec(
            "chainermn",
            "mpirun",
            "ChainerMN, one MPI process per device: pure_nccl communicator on GPU, naive (MPI) on CPU; "
            "unstaged input: each batch sent to the device when the step takes it",
            staged=False,
            communication=gradient_all_reduce(
                "chainermn.create_multi_node_optimizer: a replica per process; its update all-reduces every "
                "gradient (multi_node_mean_grad, packed into one buffer by pure_nccl) after the backward",
                Phase.AFTER_BACKWARD,
            ),
        ),
    ),
    import_names=("chainer", "chainermn", "mpi4py"),
    environment="chainer",
    install_hint="make env-chainer (needs mpiexec: apt-get install openmpi-bin libopenmpi-dev)",
    required_commands=("mpiexec",),
    capabilities=Capabilities(
        CHAINER_MODELS,
        precisions=("fp32",),
        data_formats=("channels_first",),
        loader="chainer.iterators.MultiprocessIterator",
        no_compiler="Chainer runs define-by-run only and has no graph compiler",
    ),
    memory=DeviceMemory((CUPY_OOM,), cap=CUPY_CAP),
)
