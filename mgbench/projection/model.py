"""Past this machine: a training step's time at N devices, from one measured step and the links.

The model, in the order a step meets it (weak scaling: the batch per device stays fixed):

- **Model bytes** per step: trainable parameters x bytes per element. Data-parallel strategies
  exchange parameters and gradients in the parameters' dtype, and every adapter here keeps fp32
  weights under bf16/fp16 autocast, so both are fp32 (4 bytes).
- **Collectives**: what the strategy runs each step over those bytes (`Communication`, declared
  per strategy in the framework registry: DDP an all-reduce of the gradients during the
  backward; FSDP's full shard an all-gather of the parameters during the forward, another and a
  reduce-scatter of the gradients during the backward), each a message of its share of them.
- **Collective time** of a message of B bytes over N devices on M nodes of G devices each, in
  NCCL's own alpha-beta form (its tuning model, `src/graph/tuning.cc`) and bus-bandwidth
  convention (busbw = algbw x the kind's factor, as nccl-tests report it; a ring's message goes
  round p times, 2 for an all-reduce, else 1, and moves f x B through each link, f = 2(N-1)/N for
  an all-reduce, (N-1)/N for an all-gather or reduce-scatter, 1 for a broadcast or reduce):
    ring: base + p(N-M) a_within + p(M-1) a_across + f x B / busbw
    tree (all-reduce only): base + 2((G-1) a_within + floor(log2 M) a_across) + 2 x B / busbw
  (a tree's algorithm bandwidth is half its bus bandwidth); busbw is the within-node link's
  where one node holds every device, else the smaller of it and the node's network (rings
  stream through every node's NICs at once). Each all-reduce takes whichever algorithm is
  faster, as NCCL's tuner does.
- **Exchange**: how the strategy issues its collectives (`Exchange`, declared per strategy in
  the framework registry): in buckets of up to a size (DDP's 25 MiB, Horovod's 64 MiB fusion
  buffer, XLA's 30 MiB all-reduce combiner, which also puts at most 256 tensors in one), one
  collective each; each pays the latency terms, all together pay the bandwidth term once.
- **Overlap**: an overlapped exchange (DDP, Horovod) runs a pass's collectives while that pass
  still computes. Those of the backward hide behind a window of `overlap_share` x the step's
  compute, except the largest bucket (the last, which only exists once the backward has ended);
  those of the forward behind the rest of the compute, except the largest (the first, which the
  forward waits for): exposed = max(total - window, largest bucket), per pass. An exchange after
  the backward (XLA's, as its default GPU schedule runs it), and collectives before the forward
  or after the backward (DataParallel's, ZeRO's parameter broadcast) are exposed whole.
- **Host**: what one device's step spends waiting for its host (the one-device step less its
  compute: the host launching the step, copying the batch, synchronising). With a process per
  device (DDP, Horovod) every process does this for its own device beside the others, already
  inside the one-device step. With one process for every device of a node (`Dispatch`, declared
  per strategy in the framework registry: Keras over JAX's `jax.shard_map` over the local
  devices) that process does it for each device in turn, so a node of G devices pays it G
  times: (G - 1) x host more than one device does.
- **Overhead**: seconds every multi-device step adds beyond the exchange and the host
  (synchronisation, the framework's own work around collectives), zero unless fitted to a
  measured multi-device row.
- **Input**: a node whose data loaders deliver at most R images/sec caps the node at R.

Step at N = one-device step + exposed collectives + host of the further devices one process
drives + overhead (N > 1); images/sec = N x batch / step, capped by the input; efficiency =
images/sec over N x the one-device rate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

from mgbench.core.collectives import CollectiveKind, Communication, Phase, gradient_all_reduce
from mgbench.core.errors import UsageError
from mgbench.frameworks.exchange import DDP_EXCHANGE, PROCESS_PER_DEVICE, Dispatch, Exchange

Algorithm = Literal["ring", "tree"]
ALGORITHMS: tuple[Algorithm, ...] = ("ring", "tree")
BASE_LATENCY_SECONDS = {"ring": 8.4e-6, "tree": 0.0}
"""NCCL's base latency per collective for its Simple protocol (the one large buckets use)."""
EFFICIENCY_FLOOR = 0.9
"""Where a row's scaling is said to stop: the first count whose efficiency is under this."""


@dataclass(frozen=True)
class Link:
    """One kind of link, as the all-reduce sees it: bus bandwidth per direction and the latency of
    one hop per algorithm."""

    name: str
    bus_bytes_per_second: float
    hop_seconds: dict[str, float]
    """Per algorithm (`ring`, `tree`): the latency one step of it adds on this link."""
    source: str
    """Where the figures come from: a vendor's rate, or the bandwidth file that measured them."""

    def __post_init__(self) -> None:
        if self.bus_bytes_per_second <= 0:
            raise UsageError(f"link {self.name}: bandwidth must be positive, got {self.bus_bytes_per_second}")


@dataclass(frozen=True)
class Interconnect:
    """Devices in nodes of `gpus_per_node`, linked by `within` inside a node and by `nics_per_node`
    links `across` between nodes."""

    within: Link
    across: Link | None
    gpus_per_node: int
    nics_per_node: int = 1

    def __post_init__(self) -> None:
        if self.gpus_per_node < 1 or self.nics_per_node < 1:
            raise UsageError(
                f"--gpus-per-node and --nics-per-node must be at least 1, got {self.gpus_per_node}, {self.nics_per_node}"
            )

    def nodes(self, devices: int) -> int:
        """Nodes `devices` fill: one up to a node's devices, else whole nodes (anything else is refused)."""
        if devices < 1:
            raise UsageError(f"device counts must be at least 1, got {devices}")
        if devices <= self.gpus_per_node:
            return 1
        if devices % self.gpus_per_node:
            raise UsageError(
                f"{devices} GPUs do not fill nodes of {self.gpus_per_node}: give counts up to one node or whole nodes"
            )
        if self.across is None:
            raise UsageError(
                f"{devices} GPUs span {devices // self.gpus_per_node} nodes of {self.gpus_per_node}: name the network "
                "too, e.g. --interconnect nvlink4+ib-ndr"
            )
        return devices // self.gpus_per_node

    def reach(self, up_to: int) -> int:
        """The largest count up to `up_to` these links connect: one node without a network."""
        return up_to if self.across is not None else min(up_to, self.gpus_per_node)

    def bus_bandwidth(self, devices: int) -> float:
        """Bytes per second through each device's ring: the slowest of the links it crosses."""
        if self.nodes(devices) == 1 or self.across is None:
            return self.within.bus_bytes_per_second
        return min(self.within.bus_bytes_per_second, self.nics_per_node * self.across.bus_bytes_per_second)

    def allreduce_seconds(self, message_bytes: float, devices: int, algorithm: Algorithm) -> float:
        """One all-reduce of `message_bytes` over `devices` (module doc); 0 on one device."""
        if algorithm == "ring":
            return self.ring_seconds(CollectiveKind.ALL_REDUCE, message_bytes, devices)
        if devices == 1:
            return 0.0
        nodes = self.nodes(devices)
        per_node = devices // nodes
        within, across = self.hop_seconds(algorithm, nodes)
        latency = 2 * ((per_node - 1) * within + int(math.log2(nodes)) * across)
        transfer = 2 * message_bytes / self.bus_bandwidth(devices)
        return BASE_LATENCY_SECONDS[algorithm] + latency + transfer

    def ring_seconds(self, kind: CollectiveKind, message_bytes: float, devices: int) -> float:
        """One collective of `kind` of `message_bytes` round a ring of `devices` (module doc); 0 on one device."""
        if devices == 1:
            return 0.0
        nodes = self.nodes(devices)
        within, across = self.hop_seconds("ring", nodes)
        latency = kind.passes * (devices - nodes) * within + kind.passes * (nodes - 1) * across
        transfer = kind.bus_factor(devices) * message_bytes / self.bus_bandwidth(devices)
        return BASE_LATENCY_SECONDS["ring"] + latency + transfer

    def hop_seconds(self, algorithm: Algorithm, nodes: int) -> tuple[float, float]:
        """One hop's latency within a node and across nodes (none on one node)."""
        across = self.across.hop_seconds[algorithm] if self.across is not None and nodes > 1 else 0.0
        return self.within.hop_seconds[algorithm], across

    def fastest_allreduce_seconds(self, message_bytes: float, devices: int, algorithms: tuple[Algorithm, ...]) -> float:
        return min(self.allreduce_seconds(message_bytes, devices, algorithm) for algorithm in algorithms)

    def fastest_seconds(
        self, kind: CollectiveKind, message_bytes: float, devices: int, algorithms: tuple[Algorithm, ...]
    ) -> float:
        """One collective of `kind` by the fastest of `algorithms` it has (a ring where it has no tree)."""
        if kind.has_tree:
            return self.fastest_allreduce_seconds(message_bytes, devices, algorithms)
        return self.ring_seconds(kind, message_bytes, devices)


@dataclass(frozen=True)
class CountProjection:
    """The model's step at one device count."""

    devices: int
    nodes: int
    step_seconds: float
    samples_per_sec: float
    efficiency: float
    allreduce_seconds: float
    """The whole exchange of one step, every collective, hidden or not."""
    exposed_seconds: float
    """What of it the backward pass does not hide."""
    host_seconds: float
    """The host work of the further devices one process drives (zero with a process per device)."""
    overhead_seconds: float
    input_limited: bool

    @property
    def limiter(self) -> str:
        """What holds this count back: `input` when the loaders cap it; under the efficiency floor,
        the largest of the exposed exchange (`communication`), the one process's `host` work and the
        fitted `overhead`; else `nothing`."""
        if self.input_limited:
            return "input"
        if self.efficiency >= EFFICIENCY_FLOOR:
            return "nothing"
        losses = {"communication": self.exposed_seconds, "host": self.host_seconds, "overhead": self.overhead_seconds}
        return max(losses, key=losses.__getitem__)


@dataclass(frozen=True)
class StepModel:
    """What the projection needs from a measured row (module doc)."""

    one_device_step_seconds: float
    compute_seconds: float
    overlap_share: float
    gradient_bytes: float
    """The model's bytes (its fp32 parameters, and as many of gradients): what each collective
    carries its share of."""
    images_per_device: int
    exchange: Exchange = DDP_EXCHANGE
    tensors: int | None = None
    """Trainable tensors (weights, biases, batch-norm scales and shifts): what a per-tensor
    exchange counts (None: not known)."""
    overhead_seconds: float = 0.0
    input_samples_per_sec_per_node: float | None = None
    """The most images/sec one node's loaders deliver (None: not a limit, or not measured)."""
    algorithms: tuple[Algorithm, ...] = ALGORITHMS
    host_seconds: float = 0.0
    """What the one-device step waits for its host (module doc): paid once more for each further
    device one process drives (`dispatch`)."""
    dispatch: Dispatch = PROCESS_PER_DEVICE
    communication: Communication = gradient_all_reduce("data parallelism on a replicated model")
    """The collectives of one step, as the strategy declares them (the calibration projects no
    strategy that declares none); the default is the model's formulas' plain case."""

    def __post_init__(self) -> None:
        if self.one_device_step_seconds <= 0 or self.gradient_bytes <= 0 or self.exchange.bucket_bytes <= 0:
            raise ValueError("step time, gradient bytes and bucket size must be positive")
        if not 0 <= self.overlap_share <= 1:
            raise ValueError(f"overlap share must lie in [0, 1], got {self.overlap_share}")
        if not 0 <= self.host_seconds <= self.one_device_step_seconds:
            raise ValueError(f"host seconds must lie between zero and the step, got {self.host_seconds}")

    def further_host_seconds(self, devices: int, nodes: int) -> float:
        """The host work one process adds for the devices it drives beyond the first."""
        return (self.dispatch.devices_in_turn(devices, nodes) - 1) * self.host_seconds

    def bucket_seconds(self, interconnect: Interconnect, devices: int, phase: Phase) -> list[float]:
        """Each bucket's time of the collectives `phase` runs, as the exchange issues them."""
        return [
            interconnect.fastest_seconds(collective.kind, size, devices, self.algorithms)
            for collective in self.communication.in_phase(phase)
            for size in self.exchange.buckets(collective.message_bytes(self.gradient_bytes), self.tensors)
        ]

    def window_seconds(self, phase: Phase) -> float:
        """The compute an overlapped exchange hides `phase`'s collectives behind: the backward's
        window (`overlap_share`), the rest of the compute for the forward's, none outside them."""
        if not (self.exchange.overlapped and phase.beside_compute):
            return 0.0
        share = self.overlap_share if phase is Phase.BACKWARD else 1 - self.overlap_share
        return share * self.compute_seconds

    def collective_seconds(self, interconnect: Interconnect, devices: int) -> tuple[float, float]:
        """The whole exchange of one step (every collective, every bucket) and its largest bucket
        alone (the last of the backward's may be a full one)."""
        times = [time for phase in Phase for time in self.bucket_seconds(interconnect, devices, phase)]
        return sum(times), max(times, default=0.0)

    def exposed_seconds(self, interconnect: Interconnect, devices: int) -> float:
        """What of the exchange the step waits for: per phase, what its window leaves, never less
        than its largest bucket (all of it where no window hides it)."""
        if devices == 1:
            return 0.0
        exposed = 0.0
        for phase in Phase:
            if times := self.bucket_seconds(interconnect, devices, phase):
                exposed += max(sum(times) - self.window_seconds(phase), max(times))
        return exposed

    def at(self, interconnect: Interconnect, devices: int) -> CountProjection:
        nodes = interconnect.nodes(devices)
        total, _ = self.collective_seconds(interconnect, devices)
        exposed = self.exposed_seconds(interconnect, devices)
        host = self.further_host_seconds(devices, nodes)
        overhead = self.overhead_seconds if devices > 1 else 0.0
        step = self.one_device_step_seconds + exposed + host + overhead
        images = devices * self.images_per_device / step
        cap = self.input_samples_per_sec_per_node
        if limited := (cap is not None and images > nodes * cap):
            images = nodes * cap
            step = devices * self.images_per_device / images
        ideal = devices * self.images_per_device / self.one_device_step_seconds
        return CountProjection(devices, nodes, step, images, images / ideal, total, exposed, host, overhead, limited)

    def with_overhead(self, seconds: float) -> StepModel:
        return replace(self, overhead_seconds=seconds)


def scan_counts(gpus_per_node: int, up_to: int) -> list[int]:
    """Counts to look for the efficiency floor at: powers of two within a node, the full node,
    then whole nodes doubling, up to `up_to`."""
    counts = {2**k for k in range(1, gpus_per_node.bit_length()) if 2**k < gpus_per_node}
    count = gpus_per_node
    while count <= up_to:
        counts.add(count)
        count *= 2
    return sorted(c for c in counts if 1 < c <= up_to)


def first_below_floor(model: StepModel, interconnect: Interconnect, up_to: int) -> CountProjection | None:
    """The smallest scanned count whose efficiency is under `EFFICIENCY_FLOOR` (None: none up to
    `up_to`, or up to one node where the links have no network)."""
    for count in scan_counts(interconnect.gpus_per_node, interconnect.reach(up_to)):
        projection = model.at(interconnect, count)
        if projection.efficiency < EFFICIENCY_FLOOR:
            return projection
    return None


def fitted_overhead(model: StepModel, interconnect: Interconnect, measured: dict[int, float]) -> float:
    """Overhead seconds per multi-device step that make the model meet measured efficiencies
    (device count -> efficiency against one device): the mean of what each measurement leaves
    unexplained, never negative (where the model's own terms already cover a measurement, it
    adds nothing)."""
    bare = model.with_overhead(0.0)
    gaps = [
        bare.one_device_step_seconds / efficiency - bare.at(interconnect, devices).step_seconds
        for devices, efficiency in measured.items()
        if devices > 1
    ]
    return max(0.0, sum(gaps) / len(gaps)) if gaps else 0.0
