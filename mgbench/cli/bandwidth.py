"""`mgbench bandwidth`: host<->device, device<->device and all-reduce bandwidth, into bandwidth.json."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.table import Table

from mgbench.cli.values import folder_path, positive_seconds
from mgbench.machine.devices import AUTO, DEVICE_REQUESTS, check_device_counts, device_capacity, resolve_device_kind
from mgbench.records.bandwidth import (
    BANDWIDTH_FILE,
    DEFAULT_COPY_BYTES,
    DEFAULT_SIZES,
    BandwidthReport,
    parse_size,
    parse_sizes,
)
from mgbench.records.peak import vendor_peak
from mgbench.records.runfolder import RunFolder
from mgbench.runner.bandwidth import BANDWIDTH_LOG, MEASURE_TIMEOUT_SECONDS, measure_bandwidth


def register(verbs: argparse._SubParsersAction) -> None:
    parser = verbs.add_parser(
        "bandwidth", help="measure copy and all-reduce bandwidth and the dense matmul peak (torch) into bandwidth.json"
    )
    parser.add_argument(
        "--gpus", type=int, default=None, help="processes in the all-reduce (default: every GPU, or 2 on CPU)"
    )
    parser.add_argument(
        "--device",
        default=AUTO,
        choices=DEVICE_REQUESTS,
        help="auto (default): the GPUs when visible, else CPU processes over gloo",
    )
    parser.add_argument(
        "--sizes", default=",".join(map(str, DEFAULT_SIZES)), help="all-reduce message bytes, e.g. 1K,1M,64M"
    )
    parser.add_argument("--copy-bytes", default=str(DEFAULT_COPY_BYTES), help="bytes per copy measurement, e.g. 64M")
    parser.add_argument("--timeout", type=positive_seconds, default=MEASURE_TIMEOUT_SECONDS, help="seconds")
    parser.add_argument(
        "--out", type=folder_path, default=Path("."), help=f"folder for {BANDWIDTH_FILE} (default: here)"
    )
    parser.set_defaults(handler=handle)


def matmul_figure(report: BandwidthReport, precision: str, tflops: float) -> str:
    """`bf16 790.12 (vendor: NVIDIA H200 SXM 989.5, 80% of it)`: the measured peak rows are held to,
    beside the datasheet's where the device is in `VENDOR_PEAKS`, so the gap between them is seen."""
    vendor = vendor_peak(report.device_names[0], precision) if report.device_names else None
    if vendor is None:
        return f"{precision} {tflops:.2f}"
    peak, source = vendor
    return f"{precision} {tflops:.2f} ({source} {peak:g}, {tflops / peak:.0%} of it)"


def print_report(report: BandwidthReport, console: Console) -> None:
    console.print(f"{report.devices} x {report.device_kind} ({report.backend}): {', '.join(report.device_names)}")
    if report.host_memcpy_gbps is not None:
        console.print(f"host memcpy: {report.host_memcpy_gbps:.2f} GB/s")
    for label, figures in (("host->device", report.host_to_device_gbps), ("device->host", report.device_to_host_gbps)):
        if figures:
            console.print(f"{label}: " + ", ".join(f"{k} {v:.2f} GB/s" for k, v in figures.items()))
    if report.matmul_tflops:
        rates = ", ".join(
            matmul_figure(report, precision, tflops) for precision, tflops in report.matmul_tflops.items()
        )
        console.print(f"dense matmul ({report.matmul_size}x{report.matmul_size}) TFLOP/s per device: {rates}")
    if report.device_to_device_gbps:
        matrix = Table(title="device->device GB/s (row: source)")
        matrix.add_column("")
        for j in range(len(report.device_to_device_gbps)):
            matrix.add_column(f"GPU{j}")
        for i, row in enumerate(report.device_to_device_gbps):
            matrix.add_row(f"GPU{i}", *("-" if v is None else f"{v:.1f}" for v in row))
        console.print(matrix)
    table = Table(title="all-reduce")
    for column in ("bytes", "time us", "algbw GB/s", "busbw GB/s"):
        table.add_column(column, justify="right")
    for entry in report.allreduce:
        table.add_row(
            str(entry["bytes"]),
            f"{entry['seconds'] * 1e6:.1f}",
            f"{entry['algbw_gbps']:.3f}",
            f"{entry['busbw_gbps']:.3f}",
        )
    console.print(table)


def handle(args: argparse.Namespace) -> int:
    kind = resolve_device_kind(args.device)
    devices = args.gpus if args.gpus is not None else (device_capacity(kind) if kind.on_gpu else 2)
    check_device_counts([devices], kind)
    sizes = parse_sizes(args.sizes)
    copy_bytes = parse_size(args.copy_bytes, "--copy-bytes")
    folder = RunFolder(args.out)
    path, log = folder.bandwidth, folder.log(BANDWIDTH_LOG)
    with folder.claimed(create=True):
        outcome = measure_bandwidth(folder, devices, kind, sizes, copy_bytes, args.timeout)
    console = Console()
    if outcome.returncode != 0 or not path.exists():
        console.print(f"[red]bandwidth measurement failed[/] (log: {log})\n{outcome.log_tail}")
        return 1
    print_report(BandwidthReport.read(path), console)
    console.print(f"written: {path}")
    return 0
