"""MXNet Gluon, declared without importing it: one process drives every device through a kvstore."""

from __future__ import annotations

from mgbench.core.collectives import Phase, reduce_and_broadcast
from mgbench.frameworks.memory import MXNET_CAP, MXNET_OOM, DeviceMemory
from mgbench.frameworks.specs import BATCH_NORM_UNMATCHED, Capabilities, FrameworkSpec, ModelBuilders, StrategySpec

GLUON_MODELS = ModelBuilders(
    "mgbench.frameworks.gluon.models",
    ("densenet121", "resnet50", "inception_v3", "vit_b_16", "tiny"),
    unmatched=BATCH_NORM_UNMATCHED,
)
"""torchvision's architectures built in `gluon.nn` (Inception-v3 the model zoo's; ViT-B/16 with attention from
MXNet's own operators), as `models.py` builds them."""

KVSTORE_COMMUNICATION = reduce_and_broadcast(
    "gluon.Trainer.step (mxnet/gluon/trainer.py, _allreduce_grads): after the backward, kvstore.pushpull of "
    "each parameter: push sums its gradients onto one device, which updates it there (update_on_kvstore, "
    "MXNET_UPDATE_ON_KVSTORE=1 by default), and pull broadcasts the updated parameter to every device; kvstore "
    "'nccl' does the same with ncclReduce and ncclBcast",
    Phase.AFTER_BACKWARD,
)
"""What both kvstores move each step."""

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
            communication=KVSTORE_COMMUNICATION,
        ),
        StrategySpec(
            "nccl",
            "inprocess",
            "as 'device', with gradients summed through kvstore 'nccl'",
            cpu_multi_device_note="the NCCL kvstore exchanges between CUDA devices only",
            staged=False,
            communication=KVSTORE_COMMUNICATION,
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
