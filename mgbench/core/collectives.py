"""What a data-parallel strategy shards and which collectives it runs each step (`Communication`),
declared per strategy in its framework's `spec.py` (`StrategySpec.communication`) and priced on
the ring model of each collective: by a row's expected communication time
(`mgbench.records.bandwidth`) and by the scaling projection (`mgbench.projection`).

On the ground floor because a row's figure (records) prices it as the projection (above the
frameworks) does. How the collectives are issued (in buckets of what size, beside the passes or
after them) is the strategy's `Exchange` (`mgbench.frameworks.exchange`).

Bytes follow nccl-tests' bus-bandwidth convention (`doc/PERFORMANCE.md` there): a collective's
message is its whole buffer (the full gradients a reduce-scatter reduces, the full parameters an
all-gather assembles), and a ring moves `bus_factor(N)` times it through each device's link:
all-reduce 2(N-1)/N (a reduce-scatter, then an all-gather), reduce-scatter and all-gather (N-1)/N,
broadcast and reduce 1 (a pipelined chain). So the bus bandwidth measured on an all-reduce prices
every kind alike.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum


class Sharding(Enum):
    """What of the training state each device holds a 1/N shard of instead of a whole copy; each
    shards what the one before it does, and more."""

    NOTHING = "nothing"
    """Replicated: every device holds the parameters, gradients and optimizer state (DDP)."""
    OPTIMIZER_STATE = "the optimizer state"
    """ZeRO stage 1 (torch's ZeroRedundancyOptimizer)."""
    GRADIENTS = "the gradients and optimizer state"
    """ZeRO stage 2, FSDP's SHARD_GRAD_OP."""
    PARAMETERS = "the parameters, gradients and optimizer state"
    """ZeRO stage 3, FSDP's FULL_SHARD (FSDP2's fully_shard)."""


class CollectiveKind(Enum):
    """A collective operation, with the ring's traffic per byte of its message."""

    ALL_REDUCE = "all-reduce"
    REDUCE_SCATTER = "reduce-scatter"
    ALL_GATHER = "all-gather"
    BROADCAST = "broadcast"
    REDUCE = "reduce"

    @property
    def passes(self) -> int:
        """Times the message goes round the ring: an all-reduce is a reduce-scatter and an all-gather."""
        return 2 if self is CollectiveKind.ALL_REDUCE else 1

    @property
    def has_tree(self) -> bool:
        """NCCL runs its tree algorithm for all-reduce only; every other kind goes round a ring."""
        return self is CollectiveKind.ALL_REDUCE

    def bus_factor(self, devices: int) -> float:
        """Bytes through each device's link per byte of the message, on a ring of `devices` (0 on one)."""
        if devices == 1:
            return 0.0
        if self in (CollectiveKind.BROADCAST, CollectiveKind.REDUCE):
            return 1.0
        return self.passes * (devices - 1) / devices


class Tensors(Enum):
    """The model-sized tensors a collective carries (fp32 here: `GRADIENT_BYTES_PER_PARAM` a parameter)."""

    PARAMETERS = "parameters"
    GRADIENTS = "gradients"


class Phase(Enum):
    """When in a step a collective runs: during a pass its strategy's exchange may hide it behind
    that pass's compute (`Exchange.overlapped`); before the forward or after the backward nothing does."""

    BEFORE_FORWARD = "before the forward"
    FORWARD = "during the forward"
    BACKWARD = "during the backward"
    AFTER_BACKWARD = "after the backward"

    @property
    def beside_compute(self) -> bool:
        return self in (Phase.FORWARD, Phase.BACKWARD)


@dataclass(frozen=True)
class Collective:
    """One collective a strategy runs every step over the model's `carries`, `fraction` of their
    bytes (1: all of them; 0.5: in half the precision), at `phase`."""

    kind: CollectiveKind
    carries: Tensors
    phase: Phase
    fraction: float = 1.0

    def __post_init__(self) -> None:
        if self.fraction <= 0:
            raise ValueError(f"a collective carries a positive fraction of the model's bytes, got {self.fraction}")

    def message_bytes(self, model_bytes: float) -> float:
        """Its message: `fraction` of the model's bytes."""
        return model_bytes * self.fraction

    def bus_bytes(self, model_bytes: float, devices: int) -> float:
        """Bytes through each device's link on a ring of `devices`."""
        return self.kind.bus_factor(devices) * model_bytes * self.fraction

    def describe(self) -> str:
        share = "" if self.fraction == 1 else f"{self.fraction:g} of "
        return f"{self.kind.value} of {share}the {self.carries.value} {self.phase.value}"


@dataclass(frozen=True)
class Communication:
    """What a strategy shards and the collectives it runs each step, in the order it runs them."""

    shards: Sharding
    collectives: tuple[Collective, ...]
    source: str
    """What the strategy's implementation does, and where."""

    def bus_bytes(self, model_bytes: float, devices: int) -> float:
        """Bytes through each device's link per step, every collective together."""
        return sum(collective.bus_bytes(model_bytes, devices) for collective in self.collectives)

    def largest_message(self, model_bytes: float) -> float:
        """The largest message of one step (0 without collectives)."""
        return max((collective.message_bytes(model_bytes) for collective in self.collectives), default=0.0)

    def in_phase(self, phase: Phase) -> Iterable[Collective]:
        return (collective for collective in self.collectives if collective.phase is phase)

    def describe(self) -> str:
        moves = ", ".join(collective.describe() for collective in self.collectives) or "no collective"
        return f"shards {self.shards.value}; {moves}"


UNDECLARED = "its strategy declares neither what it shards nor the collectives it runs (StrategySpec.communication)"
"""Why a row of such a strategy has no expected communication and its series is not projected."""


def gradient_all_reduce(source: str, phase: Phase = Phase.BACKWARD) -> Communication:
    """Data parallelism on a replicated model: one all-reduce of every gradient each step, during
    the backward as its buckets fill (DDP, Horovod) or after it (`phase`)."""
    return Communication(Sharding.NOTHING, (Collective(CollectiveKind.ALL_REDUCE, Tensors.GRADIENTS, phase),), source)


def reduce_and_broadcast(source: str, broadcast: Phase = Phase.BEFORE_FORWARD) -> Communication:
    """Data parallelism around one copy of the model (on a device or the CPU), which alone is
    updated: every replica's gradients reduced onto it after the backward, and its parameters
    broadcast to every device, either before each forward (nn.DataParallel's replication, a
    central storage's reads) or once the update is made (`broadcast`: Phase.AFTER_BACKWARD, a
    kvstore's pull)."""
    reduce = Collective(CollectiveKind.REDUCE, Tensors.GRADIENTS, Phase.AFTER_BACKWARD)
    share = Collective(CollectiveKind.BROADCAST, Tensors.PARAMETERS, broadcast)
    in_order = (share, reduce) if broadcast is Phase.BEFORE_FORWARD else (reduce, share)
    return Communication(Sharding.NOTHING, in_order, source)


def fully_sharded(source: str, gathered_again_for_backward: bool = True) -> Communication:
    """Data parallelism on a model whose parameters are sharded too (ZeRO-3, FSDP's FULL_SHARD):
    each unit's parameters all-gathered for its forward, freed after it and all-gathered again for
    its backward, and its gradients reduce-scattered in the backward, each device keeping its
    shard. `gathered_again_for_backward` False: the gathered parameters are kept from the forward
    to the backward (ZeRO-2, FSDP's SHARD_GRAD_OP), so the parameters are whole between the
    passes and only the gradients and optimizer state stay sharded."""
    gather = Collective(CollectiveKind.ALL_GATHER, Tensors.PARAMETERS, Phase.FORWARD)
    regather = Collective(CollectiveKind.ALL_GATHER, Tensors.PARAMETERS, Phase.BACKWARD)
    scatter = Collective(CollectiveKind.REDUCE_SCATTER, Tensors.GRADIENTS, Phase.BACKWARD)
    if gathered_again_for_backward:
        return Communication(Sharding.PARAMETERS, (gather, regather, scatter), source)
    return Communication(Sharding.GRADIENTS, (gather, scatter), source)


def sharded_optimizer_state(source: str) -> Communication:
    """Data parallelism on a replicated model whose optimizer state is sharded (ZeRO-1): every
    gradient all-reduced during the backward, each device updating the parameters its shard of
    the state covers, which it then broadcasts to the others (each parameter's bytes broadcast
    once, by its owner)."""
    return Communication(
        Sharding.OPTIMIZER_STATE,
        (
            Collective(CollectiveKind.ALL_REDUCE, Tensors.GRADIENTS, Phase.BACKWARD),
            Collective(CollectiveKind.BROADCAST, Tensors.PARAMETERS, Phase.AFTER_BACKWARD),
        ),
        source,
    )
