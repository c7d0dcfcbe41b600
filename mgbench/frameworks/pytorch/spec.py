"""PyTorch, declared without importing it: DDP, FSDP2, ZeRO-1 and nn.DataParallel over torchvision's
models and GPT-2.

What Horovod (over PyTorch) and Keras over PyTorch share with it is declared here once and
borrowed: torchvision's builder table, torch's loader and torch.compile."""

from __future__ import annotations

from mgbench.core.collectives import fully_sharded, gradient_all_reduce, reduce_and_broadcast, sharded_optimizer_state
from mgbench.core.job import DEFAULT_COMPILE_MODE
from mgbench.core.optimization import SGD, AdamW
from mgbench.frameworks.exchange import DDP_EXCHANGE, FSDP2_EXCHANGE
from mgbench.frameworks.memory import TORCH_CAP, TORCH_OOM, DeviceMemory
from mgbench.frameworks.specs import (
    Capabilities,
    Compiler,
    FrameworkSpec,
    ModelBuilders,
    StrategySpec,
    with_unstaged_twin,
)

TORCH_COMPILE = Compiler(
    "torch.compile", (DEFAULT_COMPILE_MODE, "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
)
"""torch.compile's modes (inductor); `reduce-overhead` adds CUDA graphs."""
TORCH_LOADER = "torch.utils.data.DataLoader"
TORCHVISION = ModelBuilders(
    "mgbench.frameworks.pytorch.models",
    ("densenet121", "resnet50", "inception_v3", "vit_b_16", "tiny", "gpt2", "gpt2-medium", "gpt2-xl", "gpt2-tiny"),
)
"""torchvision's architectures and GPT-2 (`gpt2.py`), which PyTorch and Horovod over it build
(the FLOP count counts the image models: a language model's work is a closed form)."""
DATA_PARALLEL_NO_COMPILE = (
    "torch.compile composes with DistributedDataParallel, not with nn.DataParallel, which copies "
    "the module into new replica threads every step"
)
NVJPEG = "nvJPEG (torchvision.io.decode_jpeg)"
"""What decodes a JPEG dataset on the GPU with `--decode gpu` (`pytorch/device_decode.py`)."""
TORCH_CAPABILITIES = Capabilities(
    TORCHVISION,
    loader=TORCH_LOADER,
    profiler="torch.profiler",
    compiler=TORCH_COMPILE,
    gpu_decoder=NVJPEG,
    splits_decode=True,
    fused_optimizers={SGD.kind: "torch.optim.SGD(fused=True)", AdamW.kind: "torch.optim.AdamW(fused=True)"},
    optimizers=(SGD.kind, AdamW.kind),
)
"""What PyTorch and Horovod over it train: torchvision's models, torch's loader, profiler,
compiler and device decoder."""
TORCH_MEMORY = DeviceMemory((TORCH_OOM,), cap=TORCH_CAP)
"""How PyTorch and Horovod over it run out of GPU memory and are capped (`memory.py`)."""
DDP_COMMUNICATION = gradient_all_reduce(
    "torch.nn.parallel.DistributedDataParallel: a replica per process, each bucket of gradients all-reduced "
    "by the autograd hook the backward reaches it in (torch/csrc/distributed/c10d/reducer.cpp)"
)
"""What DDP moves each step, in PyTorch and in Keras over PyTorch."""
DATA_PARALLEL_COMMUNICATION = reduce_and_broadcast(
    "torch.nn.DataParallel: every forward replicates the module from device 0 (torch/nn/parallel/replicate.py: "
    "Broadcast, comm.broadcast_coalesced of the parameters), and that broadcast's backward sums every replica's "
    "gradients onto device 0 (ReduceAddCoalesced, one autograd node for all of them: after the backward)"
)
FSDP_COMMUNICATION = fully_sharded(
    "torch.distributed.fsdp.fully_shard (FSDP2), reshard_after_forward=True on every unit and the root: each "
    "unit's parameters all-gathered before its forward and again before its backward "
    "(FSDPParamGroup.unshard, _fsdp_param_group.py), its gradients reduce-scattered after its backward "
    "(foreach_reduce, _fsdp_collectives.py)"
)
FSDP_GRAD_OP_COMMUNICATION = fully_sharded(
    "torch.distributed.fsdp.fully_shard (FSDP2), reshard_after_forward=False: each unit's parameters all-gathered "
    "before its forward and kept to its backward, its gradients reduce-scattered after its backward",
    gathered_again_for_backward=False,
)
ZERO_COMMUNICATION = sharded_optimizer_state(
    "torch.distributed.optim.ZeroRedundancyOptimizer under DistributedDataParallel: DDP's all-reduce of every "
    "gradient, then each process steps the parameters its share of the state covers and broadcasts them "
    "(_broadcast_params_from_rank, zero_redundancy_optimizer.py)"
)

FRAMEWORK = FrameworkSpec(
    name="pytorch",
    module="mgbench.frameworks.pytorch.adapter",
    strategies=(
        *with_unstaged_twin(
            StrategySpec(
                "ddp",
                "torchrun",
                "DistributedDataParallel, one process per device (NCCL on GPU, gloo on CPU); staged input: "
                "on GPU the next batch is copied from pinned memory on a side stream during the step",
                communication=DDP_COMMUNICATION,
                exchange=DDP_EXCHANGE,
            ),
            "with unstaged input: each batch copied to the device by a plain .to(device) when the step "
            "takes it, so the copy is waited for (input wait) instead of overlapped",
            # PyTorch's adapter keeps the pool resident with --data-on-device whatever the strategy,
            # so its twin accepts it (and then trains as ddp does).
            no_data_on_device_note=None,
        ),
        StrategySpec(
            "fsdp",
            "torchrun",
            "FSDP2 (fully_shard) on each unit the model names (GPT-2's blocks) and on the root, one process per "
            "device: parameters, gradients and optimizer state sharded (ZeRO-3); parameters gathered for the forward "
            "and again for the backward",
            communication=FSDP_COMMUNICATION,
            exchange=FSDP2_EXCHANGE,
        ),
        StrategySpec(
            "fsdp-grad-op",
            "torchrun",
            "as fsdp, with reshard_after_forward=False: parameters gathered once a step and kept from the forward to "
            "the backward; gradients and optimizer state sharded (ZeRO-2)",
            communication=FSDP_GRAD_OP_COMMUNICATION,
            exchange=FSDP2_EXCHANGE,
        ),
        StrategySpec(
            "zero1",
            "torchrun",
            "DistributedDataParallel with ZeroRedundancyOptimizer: optimizer state sharded (ZeRO-1), each process "
            "steps its share of the parameters and broadcasts it",
            communication=ZERO_COMMUNICATION,
            exchange=DDP_EXCHANGE,
        ),
        StrategySpec(
            "dp",
            "inprocess",
            "nn.DataParallel, outputs gathered on device 0 where the loss is computed",
            cpu_multi_device_note="nn.DataParallel replicates over CUDA devices only",
            no_compile_note=DATA_PARALLEL_NO_COMPILE,
            communication=DATA_PARALLEL_COMMUNICATION,
        ),
        StrategySpec(
            "dp-loss",
            "inprocess",
            "nn.DataParallel with the loss computed on each device; only per-device losses gathered",
            cpu_multi_device_note="nn.DataParallel replicates over CUDA devices only",
            no_compile_note=DATA_PARALLEL_NO_COMPILE,
            communication=DATA_PARALLEL_COMMUNICATION,
        ),
    ),
    import_names=("torch", "torchvision"),
    environment="pytorch",
    install_hint="make env-pytorch (or: pip install -r requirements/pytorch.txt)",
    default_strategies=("ddp",),
    capabilities=TORCH_CAPABILITIES,
    memory=TORCH_MEMORY,
)
