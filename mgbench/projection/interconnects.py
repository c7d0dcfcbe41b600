"""Links to project onto: named presets at their vendors' rates, or what `mgbench bandwidth` measured.

A preset's bandwidth is the link's nominal rate per direction (docs/scaling-projection.md names each vendor's
page); NCCL reaches less than that, so a measured `bandwidth.json` is the better figure where one
exists. Hop latencies are NCCL's own (its tuning model, Simple protocol, per link type).

`--interconnect WITHIN[+ACROSS]`: WITHIN is a preset or a `bandwidth.json` (the links inside a
node), ACROSS a preset (the network between nodes).
"""

from __future__ import annotations

from pathlib import Path

from mgbench.core.errors import UsageError
from mgbench.frameworks.exchange import DDP_BUCKET_BYTES
from mgbench.projection.model import BASE_LATENCY_SECONDS, Interconnect, Link
from mgbench.records.bandwidth import GB, BandwidthReport, ring_factor

HOP_SECONDS = {
    "nvlink": {"ring": 3.4e-6, "tree": 28e-6},
    "pcie": {"ring": 5.7e-6, "tree": 28e-6},
    "network": {"ring": 9.6e-6, "tree": 50e-6},
}
"""NCCL's per-hop latency by link type for the Simple protocol (`hwLat` in its tuning model)."""

PRESETS: dict[str, tuple[str, float, str]] = {
    "nvlink4": ("nvlink", 450.0, "NVLink 4 / NVSwitch (H100, H200 SXM): 900 GB/s per GPU, both directions"),
    "nvlink3": ("nvlink", 300.0, "NVLink 3 / NVSwitch (A100 SXM): 600 GB/s per GPU, both directions"),
    "nvlink2": ("nvlink", 150.0, "NVLink 2 (V100 SXM2): 300 GB/s per GPU, both directions"),
    "nvlink1": ("nvlink", 80.0, "NVLink 1 (P100 SXM2): 160 GB/s per GPU, both directions"),
    "pcie5": ("pcie", 63.0, "PCIe 5.0 x16: 32 GT/s a lane, 128b/130b"),
    "pcie4": ("pcie", 31.5, "PCIe 4.0 x16: 16 GT/s a lane, 128b/130b"),
    "pcie3": ("pcie", 15.75, "PCIe 3.0 x16: 8 GT/s a lane, 128b/130b"),
    "ib-ndr": ("network", 50.0, "InfiniBand NDR: 400 Gb/s a port"),
    "ib-hdr": ("network", 25.0, "InfiniBand HDR: 200 Gb/s a port"),
    "ib-edr": ("network", 12.5, "InfiniBand EDR: 100 Gb/s a port"),
    "100gbe": ("network", 12.5, "100 Gb Ethernet"),
    "25gbe": ("network", 3.125, "25 Gb Ethernet"),
    "10gbe": ("network", 1.25, "10 Gb Ethernet"),
}
"""name -> (link type, GB/s per direction, what the rate is)."""


def preset_link(name: str) -> Link:
    try:
        kind, gbps, rate = PRESETS[name]
    except KeyError:
        raise UsageError(
            f"unknown interconnect {name!r}: give a bandwidth.json or one of {', '.join(PRESETS)}"
        ) from None
    return Link(name, gbps * GB, HOP_SECONDS[kind], rate)


def measured_link(path: Path) -> Link:
    """The all-reduce `mgbench bandwidth` measured: bus bandwidth at the size of a DDP bucket (the
    largest measured size not above it), and the hop latency the smallest message leaves once
    its transfer is taken off, shared by both algorithms (NCCL chose one when it was measured)."""
    try:
        report = BandwidthReport.read(path)
    except (OSError, ValueError, TypeError) as error:
        raise UsageError(f"cannot read {path} as a bandwidth.json: {error}") from None
    bus = report.bus_bandwidth_for(DDP_BUCKET_BYTES)
    if bus is None or report.devices < 2:
        raise UsageError(f"{path} holds no all-reduce over 2 or more devices to project from")
    smallest = min(report.allreduce, key=lambda entry: entry["bytes"])
    transfer = ring_factor(report.devices) * smallest["bytes"] / bus
    hop = max(0.0, (smallest["seconds"] - BASE_LATENCY_SECONDS["ring"] - transfer) / (2 * (report.devices - 1)))
    rate = f"measured: {report.devices} x {report.device_kind} ({report.backend}), {bus / GB:.0f} GB/s bus bandwidth"
    return Link(path.name, bus, {"ring": hop, "tree": hop}, rate)


def parse_interconnect(spec: str | None, default_file: Path, gpus_per_node: int, nics_per_node: int) -> Interconnect:
    """`WITHIN[+ACROSS]` as an `Interconnect`; no spec: the run folder's `bandwidth.json` within nodes."""
    if spec is None:
        if not default_file.is_file():
            raise UsageError(
                f"no {default_file.name} in the run folder: give --interconnect NAME or PATH/bandwidth.json "
                f"(names: {', '.join(PRESETS)})"
            )
        spec = str(default_file)
    within, _, across = spec.partition("+")
    within_link = measured_link(Path(within)) if within.endswith(".json") else preset_link(within)
    across_link = preset_link(across) if across else None
    return Interconnect(within_link, across_link, gpus_per_node, nics_per_node)
