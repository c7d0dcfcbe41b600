"""Link bandwidths and what they predict: the share of a training step its strategy's collectives take.

`mgbench bandwidth` measures (through torch, in `mgbench.frameworks.pytorch.bandwidth_worker`) copies
between host and devices, between devices, and all-reduce over message sizes, into
`bandwidth.json`, beside the device's dense matrix-product peak (`mgbench.records.peak` takes
rows' share of the peak against it). This module holds the framework-neutral part: the file's schema, the ring
model, and the figure put into result rows.

Bus bandwidth follows nccl-tests: a ring all-reduce of B bytes over N devices moves
2(N-1)/N * B bytes through each link, so busbw = algbw * 2(N-1)/N is comparable across N, and
the expected time of an all-reduce is 2(N-1)/N * B / busbw. Every other collective is priced at
the same bus bandwidth with its own factor (`mgbench.core.collectives.CollectiveKind.bus_factor`):
a step's expected communication is the bytes its strategy's declared collectives move through
each link (`Communication.bus_bytes`) over the bus bandwidth.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mgbench.core.collectives import UNDECLARED, CollectiveKind, Communication
from mgbench.core.errors import UsageError
from mgbench.core.schema import check_fields, read_json_file
from mgbench.records.results import RunResult, write_json_atomically

BANDWIDTH_FILE = "bandwidth.json"
GRADIENT_BYTES_PER_PARAM = 4
"""Parameters and gradients are exchanged in fp32: every adapter keeps fp32 weights, autocast or not."""
DEFAULT_SIZES = (2**10, 2**16, 2**20, 2**22, 2**24, 2**26)
DEFAULT_COPY_BYTES = 2**26
GB = 1e9
ALLREDUCE_FIELDS = ("bytes", "seconds", "algbw_gbps", "busbw_gbps")


def ring_factor(devices: int) -> float:
    """Bytes through each link per byte all-reduced by a ring: 2(N-1)/N."""
    return CollectiveKind.ALL_REDUCE.bus_factor(devices)


def expected_communication_seconds(
    communication: Communication, param_count: int, bytes_per_param: int, bus_bandwidth: float, devices: int
) -> float:
    """Seconds one step's collectives should take at `bus_bandwidth` bytes/s (ring model)."""
    if devices < 1 or bus_bandwidth <= 0:
        raise ValueError(f"need devices >= 1 and a positive bandwidth, got {devices}, {bus_bandwidth}")
    return communication.bus_bytes(param_count * bytes_per_param, devices) / bus_bandwidth


def parse_size(token: str, option: str = "--sizes") -> int:
    """Bytes from `1024`, `64K`, `1M`, `2G` (K/M/G are powers of 2); at least 4 (one float)."""
    units = {"K": 2**10, "M": 2**20, "G": 2**30}
    token = token.strip().upper()
    scale = units.get(token[-1:], 1)
    number = token[:-1] if token[-1:] in units else token
    if not number.isdigit() or int(number) * scale < 4:
        raise UsageError(f"{option} takes byte counts >= 4 such as 1024,1M,64M; got {token!r}")
    return int(number) * scale


def parse_sizes(text: str) -> list[int]:
    """Message sizes in bytes, `1024,1M,64M` style, sorted."""
    sizes = sorted({parse_size(token) for token in text.split(",") if token.strip()})
    if not sizes:
        raise UsageError("--sizes is empty")
    return sizes


@dataclass
class BandwidthReport:
    """What `bandwidth.json` holds. Bandwidths in GB/s (1e9 bytes per second)."""

    device_kind: str
    devices: int
    backend: str
    device_names: list[str] = field(default_factory=list)
    copy_bytes: int = 0
    host_to_device_gbps: dict[str, float] = field(default_factory=dict)
    """`pinned` and `pageable` source memory (CUDA); empty on CPU."""
    device_to_host_gbps: dict[str, float] = field(default_factory=dict)
    device_to_device_gbps: list[list[float | None]] = field(default_factory=list)
    """Row: source device, column: destination; None on the diagonal."""
    host_memcpy_gbps: float | None = None
    allreduce: list[dict[str, float]] = field(default_factory=list)
    """Per message size: bytes, seconds (median), algbw_gbps, busbw_gbps."""
    matmul_tflops: dict[str, float] = field(default_factory=dict)
    """Dense matrix product on one device per precision (`bf16`, `fp32`): 2 n^3 FLOPs over the
    median time of one product of two n x n matrices (`matmul_size`), in TFLOP/s."""
    matmul_size: int = 0

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def write(self, path: Path) -> None:
        write_json_atomically(path, json.dumps(self.to_dict(), indent=2))

    @classmethod
    def read(cls, path: Path) -> BandwidthReport:
        """The report in `path`; a file that is not one mgbench measured is a UsageError (a
        run folder may hold someone else's `bandwidth.json`, and its rows would be misread):
        not JSON, not an object of this class's fields, each of its declared type."""

        def foreign(why: str) -> UsageError:
            return UsageError(
                f"{path} is not a bandwidth.json measured by mgbench ({why}); move it away or choose another folder"
            )

        try:
            record = read_json_file(path, path.name)
            if not isinstance(record, dict):
                raise UsageError(f"{type(record).__name__} instead of an object")
            check_fields(record, cls, path.name)
        except UsageError as error:
            raise foreign(str(error)) from None
        try:
            report = cls(**record)
        except TypeError as error:
            raise foreign(str(error)) from None
        if not all(map(_is_allreduce_entry, report.allreduce)):
            raise foreign(f"an all-reduce entry lacks one of {', '.join(ALLREDUCE_FIELDS)}")
        return report

    def bus_bandwidth_for(self, message_bytes: float) -> float | None:
        """Bus bandwidth (bytes/s) at the largest measured size not above `message_bytes`.

        Frameworks issue collectives in buckets, never as one message larger than the model,
        so the largest size up to a step's largest message is the closest measured case.
        """
        measured = sorted((entry for entry in self.allreduce if entry["busbw_gbps"] > 0), key=lambda e: e["bytes"])
        if not measured:
            return None
        fitting = [entry for entry in measured if entry["bytes"] <= message_bytes] or measured[:1]
        return fitting[-1]["busbw_gbps"] * GB


def _is_allreduce_entry(entry: object) -> bool:
    return isinstance(entry, dict) and all(
        isinstance(entry.get(name), int | float) and not isinstance(entry.get(name), bool) for name in ALLREDUCE_FIELDS
    )


def annotate_allreduce(result: RunResult, report: BandwidthReport, communication: Communication | None) -> None:
    """Put the expected time of the collectives its strategy declares (`communication`) and their
    share of the median step into `result`; a strategy that declares none gets no figure, and a
    warning that says why."""
    config = result.config
    parameters, step = result.build.parameters, result.timing.median_step_seconds
    if result.status != "ok" or config.devices < 2 or not parameters or not step:
        return
    if communication is None:
        result.warnings.append(f"no expected communication time: {UNDECLARED}")
        return
    bus = report.bus_bandwidth_for(communication.largest_message(parameters * GRADIENT_BYTES_PER_PARAM))
    if bus is None:
        return
    seconds = expected_communication_seconds(communication, parameters, GRADIENT_BYTES_PER_PARAM, bus, config.devices)
    result.limit.expected_allreduce_seconds = seconds
    result.limit.allreduce_step_fraction = seconds / step
