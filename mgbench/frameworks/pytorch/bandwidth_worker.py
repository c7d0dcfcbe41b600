"""The `mgbench bandwidth` worker: torch measures copies and all-reduce; run under torchrun.

Every process joins one group (NCCL on GPU, gloo on CPU) and all-reduces each message size;
rank 0 alone first times the copies (host<->device pinned and pageable, device<->device over
every GPU it can see, or a host memcpy on CPU) and a dense matrix product per precision on its
device while the others wait at a barrier, then writes `bandwidth.json`. Timings are medians of
repeated operations after warm-up.

The matrix product is the device's arithmetic peak as a framework reaches it: `torch.matmul` of
two square matrices, in bf16 and in fp32 (TF32 off, PyTorch's default, so fp32 is fp32), large
enough on a GPU (8192) that launching costs nothing beside it, small on CPU (1024) so that it
ends in seconds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.distributed as dist

from mgbench.core.kinds import DeviceKind
from mgbench.records.bandwidth import GB, BandwidthReport, ring_factor

WARMUP = 3
MATMUL_SIZE = {"cuda": 8192, "cpu": 1024}
MATMUL_DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32}


def median_seconds(operation: Callable[[], None], synchronize: Callable[[], None], repeats: int) -> float:
    for _ in range(WARMUP):
        operation()
    synchronize()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        operation()
        synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def cuda_sync() -> None:
    torch.cuda.synchronize()


def copy_gbps(source: torch.Tensor, target: torch.Tensor, repeats: int) -> float:
    sync = cuda_sync if torch.cuda.is_available() else (lambda: None)
    seconds = median_seconds(lambda: target.copy_(source, non_blocking=True), sync, repeats)
    return source.numel() * source.element_size() / seconds / GB


def measure_copies(report: BandwidthReport, copy_bytes: int, repeats: int) -> None:
    """Host<->device (pinned, pageable) and device<->device on GPU; a host memcpy on CPU."""
    count = copy_bytes // 4
    if not DeviceKind(report.device_kind).on_gpu:
        report.host_memcpy_gbps = copy_gbps(torch.ones(count), torch.empty(count), repeats)
        return
    device = torch.empty(count, device="cuda:0")
    for label, pinned in (("pinned", True), ("pageable", False)):
        host = torch.ones(count, pin_memory=pinned)
        report.host_to_device_gbps[label] = copy_gbps(host, device, repeats)
        report.device_to_host_gbps[label] = copy_gbps(device, host, repeats)
    gpus = torch.cuda.device_count()
    buffers = [torch.ones(count, device=f"cuda:{i}") for i in range(gpus)]
    report.device_to_device_gbps = [
        [None if i == j else copy_gbps(buffers[i], torch.empty_like(buffers[j]), repeats) for j in range(gpus)]
        for i in range(gpus)
    ]


def measure_matmul(report: BandwidthReport, device: torch.device, repeats: int) -> None:
    """TFLOP/s of one dense n x n product per precision (2 n^3 FLOPs) on `device`."""
    size = MATMUL_SIZE[device.type]
    sync = cuda_sync if device.type == "cuda" else (lambda: None)
    torch.backends.cuda.matmul.allow_tf32 = False
    report.matmul_size = size
    for precision, dtype in MATMUL_DTYPES.items():
        a, b = (torch.randn(size, size, device=device, dtype=dtype) for _ in range(2))
        seconds = median_seconds(lambda: torch.matmul(a, b), sync, repeats)
        report.matmul_tflops[precision] = 2 * size**3 / seconds / 1e12


def measure_allreduce(report: BandwidthReport, sizes: list[int], repeats: int, device: torch.device) -> None:
    sync = cuda_sync if device.type == "cuda" else (lambda: None)
    world = dist.get_world_size()
    for size in sizes:
        tensor = torch.ones(size // 4, device=device)
        seconds = median_seconds(lambda: dist.all_reduce(tensor), sync, repeats)
        algbw = tensor.numel() * 4 / seconds / GB
        report.allreduce.append(
            {
                "bytes": tensor.numel() * 4,
                "seconds": seconds,
                "algbw_gbps": algbw,
                "busbw_gbps": algbw * ring_factor(world),
            }
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--sizes", required=True, help="comma-separated byte counts")
    parser.add_argument("--copy-bytes", type=int, required=True)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--device-kind", type=DeviceKind, choices=list(DeviceKind), required=True)
    args = parser.parse_args()
    use_cuda = args.device_kind.on_gpu
    dist.init_process_group("nccl" if use_cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0))) if use_cuda else torch.device("cpu")
    if use_cuda:
        torch.cuda.set_device(device)
    names = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if use_cuda else ["cpu"]
    report = BandwidthReport(
        args.device_kind, world, dist.get_backend(), device_names=names, copy_bytes=args.copy_bytes
    )
    if rank == 0:
        measure_copies(report, args.copy_bytes, args.repeats)
        measure_matmul(report, device, args.repeats)
    dist.barrier()
    measure_allreduce(report, [int(s) for s in args.sizes.split(",")], args.repeats, device)
    if rank == 0:
        report.write(args.out)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
