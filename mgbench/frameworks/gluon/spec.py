"""MXNet Gluon, declared without importing it: one process drives every device through a kvstore."""

from __future__ import annotations

from mgbench.frameworks.memory import MXNET_CAP, MXNET_OOM, DeviceMemory
from mgbench.frameworks.specs import BATCH_NORM_UNMATCHED, Capabilities, FrameworkSpec, ModelBuilders, StrategySpec

GLUON_MODELS = ModelBuilders(
    "mgbench.frameworks.gluon.models",
    ("densenet121", "resnet50", "inception_v3", "vit_b_16", "tiny"),
    unmatched=BATCH_NORM_UNMATCHED,
)
"""torchvision's architectures built in `gluon.nn` (Inception-v3 the model zoo's; ViT-B/16 with attention from
MXNet's own operators), as `models.py` builds them."""

FRAMEWORK = FrameworkSpec(
    name="gluon",
    module="mgbench.frameworks.gluon.adapter",
    strategies=(
        StrategySpec(
            "device",
            "inprocess",
            "one process drives every device; gluon.Trainer sums gradients through kvstore 'device'; "
            "unstaged input: split_and_load copies each device's slice when the step takes it",
            staged=False,
        ),
        StrategySpec(
            "nccl",
            "inprocess",
            "as 'device', with gradients summed through kvstore 'nccl'",
            cpu_multi_device_note="the NCCL kvstore exchanges between CUDA devices only",
            staged=False,
        ),
    ),
    import_names=("mxnet",),
    environment="gluon",
    install_hint="make env-gluon (Python <= 3.11; MXNet 1.9.1 is CPU-only from PyPI)",
    capabilities=Capabilities(
        GLUON_MODELS,
        precisions=("fp32",),
        data_formats=("channels_first",),
        loader="mxnet.gluon.data.DataLoader",
        no_compiler="its nets always run hybridized (MXNet's cached static graph, static_alloc and "
        "static_shape): that is Gluon's graph mode, and there is no compiler beyond it to switch on",
    ),
    memory=DeviceMemory((MXNET_OOM,), cap=MXNET_CAP),
    gpu_note="CPU only here: PyPI's MXNet 1.9.1 is a CPU build and no MXNet build for Hopper GPUs can be installed",
)
