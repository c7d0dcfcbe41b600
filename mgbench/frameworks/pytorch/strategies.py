"""One small object per PyTorch data-parallel strategy: how it places processes on devices,
wraps the model, computes the loss, exchanges gradients and metrics, and closes.

The adapter (`mgbench.frameworks.pytorch.adapter`) holds everything strategies share (model,
data, autocast, prefetching, evaluation) and asks its strategy object wherever they differ,
instead of comparing strategy names. Horovod's strategy lives beside its adapter.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Iterable
from typing import Any, Protocol, runtime_checkable

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import FSDPModule, fully_shard
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.distributed.tensor import DTensor

from mgbench.core.config import RunConfig
from mgbench.core.errors import UsageError


class Joined:
    """Where `join` put this process: its rank, the world size and the devices it drives."""

    def __init__(self, rank: int, world: int, devices: list[torch.device]):
        self.rank, self.world, self.devices = rank, world, devices


class StepLoss(nn.Module):
    """Model plus criterion in one forward, returning the step's loss: the module a strategy
    wraps and `--compile` compiles, so the loss (in float32, over the whole output: GPT-2's logits
    are 50,304 wide a token) is part of the compiled step rather than run eagerly after it."""

    def __init__(self, model: nn.Module, criterion: nn.Module):
        super().__init__()
        self.model = model
        self.criterion = criterion

    def forward(self, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return self.criterion(self.model(inputs).float(), targets)


class LossComputingModule(StepLoss):
    """Model plus criterion in one forward, the loss as a vector of one: DataParallel then
    gathers a scalar per device."""

    def forward(self, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return super().forward(inputs, targets).unsqueeze(0)


class TorchStrategy:
    """One process driving the devices it was given; what every strategy does unless it says otherwise."""

    replica_threads = False
    """True where replicas run in threads started anew every step: cuDNN's tuned plans are cached
    per thread, so autotuning would re-tune every convolution at every step."""

    def join(self, config: RunConfig, use_cuda: bool) -> Joined:
        if use_cuda and config.devices > torch.cuda.device_count():
            raise UsageError(f"{config.devices} devices asked for, torch sees {torch.cuda.device_count()}")
        count = config.devices if use_cuda else 1
        return Joined(0, 1, [torch.device("cuda", i) if use_cuda else torch.device("cpu") for i in range(count)])

    def loss_module(self, model: nn.Module, criterion: nn.Module) -> nn.Module:
        """What `wrap` wraps: `model` with its loss (`StepLoss`), so the strategy's module (and
        the compiled step) runs the loss too; a strategy that computes the loss elsewhere
        (DataParallel, on device 0 after gathering) takes `model` alone."""
        return StepLoss(model, criterion)

    def wrap(self, model: nn.Module, criterion: nn.Module, devices: list[torch.device]) -> nn.Module:
        return model

    def loss(self, model: nn.Module, criterion: nn.Module, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """The step's loss through the wrapped `model` (`loss_module`'s, wrapped)."""
        return model(images, labels)

    def distribute_optimizer(self, optimizer: torch.optim.Optimizer, model: nn.Module) -> torch.optim.Optimizer:
        """The optimizer the step uses; DDP and DataParallel exchange gradients in the model instead."""
        return optimizer

    def apply_gradients(self, optimizer: torch.optim.Optimizer, scaler: torch.amp.GradScaler) -> None:
        """Unscale (fp16), step and update the loss scale once backward has produced the gradients."""
        scaler.step(optimizer)
        scaler.update()

    def average(self, value: torch.Tensor) -> torch.Tensor:
        """`value` averaged over the processes, on its device (one process: itself)."""
        return value

    def global_mean(self, value: torch.Tensor) -> float:
        return float(self.average(value).item())

    def gather(self, local: Any) -> list[Any]:
        """Every process's `local` (validation shards), in rank order."""
        return [local]

    def full_state(self, module: nn.Module) -> dict[str, torch.Tensor]:
        """`module`'s parameters whole, by name, on the host (what `--save-state` writes). Every
        process calls it where the strategy shards them (a collective gathers the shards)."""
        return {name: parameter.detach().cpu() for name, parameter in module.named_parameters()}

    def close(self) -> None:
        """Leave whatever `join` joined."""


def device_ids(devices: list[torch.device]) -> list[int] | None:
    return [d.index for d in devices] if devices[0].type == "cuda" else None


class DistributedDataParallel(TorchStrategy):
    """`ddp`: one process per device under torchrun; gradients all-reduced in buckets during backward."""

    def join(self, config: RunConfig, use_cuda: bool) -> Joined:
        dist.init_process_group("nccl" if use_cuda else "gloo")
        rank, world = dist.get_rank(), dist.get_world_size()
        if world != config.devices:
            raise UsageError(f"{config.strategy} was launched with {world} processes for {config.devices} devices")
        local_rank = int(os.environ.get("LOCAL_RANK", rank))
        return Joined(rank, world, [torch.device("cuda", local_rank) if use_cuda else torch.device("cpu")])

    def wrap(self, model: nn.Module, criterion: nn.Module, devices: list[torch.device]) -> nn.Module:
        return nn.parallel.DistributedDataParallel(model, device_ids=device_ids(devices), gradient_as_bucket_view=True)

    def average(self, value: torch.Tensor) -> torch.Tensor:
        value = value.clone()
        dist.all_reduce(value)
        return value / dist.get_world_size()

    def gather(self, local: Any) -> list[Any]:
        shards: list[Any] = [None] * dist.get_world_size()
        dist.all_gather_object(shards, local)
        return shards

    def close(self) -> None:
        if dist.is_initialized():
            dist.destroy_process_group()


class ZeroRedundancy(DistributedDataParallel):
    """`zero1`: DDP's replicas and all-reduce, with the optimizer state sharded (ZeRO stage 1):
    torch's ZeroRedundancyOptimizer over the model's declared optimizer class gives each process
    the state of a share of the parameters (whole tensors, balanced by size); each steps its
    share, then broadcasts it to the others. `parameters_as_bucket_view` packs each process's
    share into one buffer per device, so that share goes in one broadcast instead of one per
    tensor."""

    def distribute_optimizer(self, optimizer: torch.optim.Optimizer, model: nn.Module) -> torch.optim.Optimizer:
        """`optimizer`'s class and settings over this process's share of `model`'s parameters
        (`optimizer` holds no state yet: torch's optimizers make it at their first step)."""
        return ZeroRedundancyOptimizer(
            model.parameters(),
            optimizer_class=type(optimizer),
            parameters_as_bucket_view=True,
            **constructor_settings(optimizer),
        )


def constructor_settings(optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    """The settings `optimizer` was made with that its class's constructor takes: its `defaults`
    less what the class sets itself (AdamW's `decoupled_weight_decay`, which Adam's constructor
    takes and AdamW's does not)."""
    accepted = inspect.signature(type(optimizer)).parameters
    return {name: value for name, value in optimizer.defaults.items() if name in accepted}


@runtime_checkable
class ShardUnits(Protocol):
    """A module that says which of its submodules FSDP shards as units of their own."""

    def shard_units(self) -> Iterable[nn.Module]: ...


def shard_units(model: nn.Module) -> list[nn.Module]:
    """The submodules FSDP gathers one at a time, as the modules of `model` name them
    (`ShardUnits`: GPT-2 names its blocks, which its forward runs in turn, so a block's parameters
    are gathered while the one before it computes, and only the blocks at work are whole).
    A model that names none is one unit: its parameters are all gathered at once."""
    return [unit for module in model.modules() if isinstance(module, ShardUnits) for unit in module.shard_units()]


def parameter_root(model: nn.Module) -> nn.Module:
    """The module inside `model`'s parameter-free wrappers (`StepLoss`, whose criterion holds no
    parameters, and the adapter's `Autocasting`): FSDP's
    root, so that a forward of the model without its wrappers (the adapter's evaluation) gathers
    the root's parameters too."""
    holders = [child for child in model.children() if next(child.parameters(), None) is not None]
    if len(holders) == 1 and next(model.parameters(recurse=False), None) is None:
        return parameter_root(holders[0])
    return model


def make_contiguous(model: nn.Module) -> None:
    """`model`'s parameters in the row-major layout, the one FSDP2 shards (it refuses a
    channels_last convolution's weight). The input stays channels_last, and a convolution
    whose input is channels_last computes in it whatever its weight's layout."""
    for parameter in model.parameters():
        if not parameter.is_contiguous():
            parameter.data = parameter.data.contiguous()


class FullyShardedDataParallel(DistributedDataParallel):
    """`fsdp`: FSDP2 (`torch.distributed.fsdp.fully_shard`): the parameters, gradients and
    optimizer state sharded over the processes (ZeRO stage 3). Each unit the model names
    (`shard_units`), then the rest of the model as its root, is sharded with
    `reshard_after_forward` True: a unit's parameters are all-gathered for its forward, freed
    after it and all-gathered again for its backward, and its gradients reduce-scattered, each
    process keeping its shard. The root too (`True` given, not torch's default for the root,
    which keeps its parameters from the forward to the backward): it then moves what the spec
    declares whatever the model's root holds (GPT-2's: the token embedding, a third of gpt2).

    Precision: the parameters stay fp32 (the master weights the optimizer steps) and the
    adapter's autocast runs the forward in bf16 or fp16 around FSDP, as under `ddp`. So the
    parameters are gathered and the gradients reduce-scattered in fp32, as the spec's bytes
    say, and a step computes what ddp's does. FSDP2's `MixedPrecisionPolicy(param_dtype=bf16)`
    would gather in bf16 (half the bytes) but also run every op in bf16 (layer norms,
    softmax), which autocast keeps in fp32: a different step from the other strategies'."""

    reshard_after_forward = True

    def wrap(self, model: nn.Module, criterion: nn.Module, devices: list[torch.device]) -> nn.Module:
        """`model` sharded in place (its parameters become shards: DTensors) over every process."""
        mesh = init_device_mesh(devices[0].type, (dist.get_world_size(),))
        make_contiguous(model)
        for unit in shard_units(model):
            fully_shard(unit, mesh=mesh, reshard_after_forward=self.reshard_after_forward)
        fully_shard(parameter_root(model), mesh=mesh, reshard_after_forward=self.reshard_after_forward)
        return model

    def full_state(self, module: nn.Module) -> dict[str, torch.Tensor]:
        """Each parameter's shards all-gathered (`DTensor.full_tensor`), every process calling it.
        Resharded first: a forward without a backward (evaluation) leaves `fsdp-grad-op`'s
        parameters gathered, in place of their shards."""
        for unit in module.modules():
            if isinstance(unit, FSDPModule):
                unit.reshard()
        return {
            name: (parameter.full_tensor() if isinstance(parameter, DTensor) else parameter).detach().cpu()
            for name, parameter in module.named_parameters()
        }


class ShardedGradientsDataParallel(FullyShardedDataParallel):
    """`fsdp-grad-op`: as `fsdp`, with `reshard_after_forward` False: each unit's gathered
    parameters are kept from its forward to its backward (one all-gather a step, not two), so
    only the gradients and optimizer state stay sharded through the step (ZeRO stage 2, FSDP's
    SHARD_GRAD_OP), and a step holds every parameter whole between the passes."""

    reshard_after_forward = False


class DataParallel(TorchStrategy):
    """`dp`: nn.DataParallel scatters the batch, replicates the model every step, runs replicas
    in threads and gathers the outputs on device 0, where the loss is computed."""

    replica_threads = True

    def loss_module(self, model: nn.Module, criterion: nn.Module) -> nn.Module:
        return model

    def wrap(self, model: nn.Module, criterion: nn.Module, devices: list[torch.device]) -> nn.Module:
        return nn.DataParallel(model, device_ids=device_ids(devices))

    def loss(self, model: nn.Module, criterion: nn.Module, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return criterion(model(images).float(), labels)


class DataParallelLoss(DataParallel):
    """`dp-loss`: as `dp`, but the loss runs inside each replica on its share of the targets, so
    only one scalar per device is gathered instead of the whole output tensor."""

    def wrap(self, model: nn.Module, criterion: nn.Module, devices: list[torch.device]) -> nn.Module:
        return nn.DataParallel(LossComputingModule(model, criterion), device_ids=device_ids(devices))

    def loss(self, model: nn.Module, criterion: nn.Module, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return model(images, labels).mean()


STRATEGIES: dict[str, type[TorchStrategy]] = {
    "ddp": DistributedDataParallel,
    "fsdp": FullyShardedDataParallel,
    "fsdp-grad-op": ShardedGradientsDataParallel,
    "zero1": ZeroRedundancy,
    "dp": DataParallel,
    "dp-loss": DataParallelLoss,
}
