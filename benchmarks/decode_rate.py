"""How many training images per second this host's cores, and one of its GPUs, decode and augment:
`python3 benchmarks/decode_rate.py DATASET [--processes 1,15] [--images 1500] [--python PY ...]`.

A loader can deliver no more than this, whatever its mechanics; a real-data row slower than its
synthetic twin while its input wait is high is bound here.

Host rows: each `--python` interpreter (default: the one running this) times the shared
`Augmentation.train_pixels` every framework's loader calls, on the same images (the first
`--images` of the training split, epoch 0), in each process count's worker processes, and
prints images/s in all and per process, so the per-core cost at 1 process and with every core
busy (shared caches, hyperthreads, clocks) shows side by side. Each row names the Pillow build
that interpreter imports (`pillow_build`): Pillow and pillow-simd install the same `PIL`
package, so comparing them takes two interpreters, e.g. `.venv/bin/python` and a framework
environment that `mgbench setup` gave pillow-simd.

GPU row, where this interpreter's torch sees CUDA: the same images as `--decode gpu` takes them,
file bytes read beforehand and windows drawn from their headers, each batch's crop planned as
the loader's workers plan it (`device_crop.crop_plan`), decoded on one GPU with
`torchvision.io.decode_jpeg(device="cuda")` in lists of `--gpu-batch` and cropped there
(`device_crop.planned_crops`): images/s of one GPU, the host's file reads and plans not counted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mgbench.datasets.augment import Augmentation
from mgbench.datasets.resolve import describe_dataset

INPUT_SIZE = 224
PROJECT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Row:
    decoder: str
    where: str
    images_per_second: float
    per_unit: float
    """Images/s per process (host) or per GPU."""
    cpu_ms_per_image: float | None
    """The workers' own CPU time per image: the per-core cost, which other processes on a busy
    host do not inflate as they do the wall-clock rates (None on the GPU)."""
    interpreter: str


def augment(job: tuple[str, int]) -> float:
    """Decode and augment one image; the CPU seconds it took this worker."""
    path, index = job
    start = time.process_time()
    Augmentation.for_input(INPUT_SIZE).train_pixels(path, 0, 0, index)
    return time.process_time() - start


def rate(jobs: list[tuple[str, int]], processes: int) -> tuple[float, float]:
    """Images per second over `jobs` in `processes` workers (the pool started before the clock),
    and CPU milliseconds per image."""
    with ProcessPoolExecutor(processes) as pool:
        list(pool.map(augment, jobs[: 2 * processes]))
        start = time.perf_counter()
        cpu = sum(pool.map(augment, jobs, chunksize=8))
        return len(jobs) / (time.perf_counter() - start), 1000 * cpu / len(jobs)


def host_rates(jobs: list[tuple[str, int]], process_counts: list[int]) -> dict:
    """This interpreter's Pillow build and its (images/s, CPU ms per image) per process count
    (what `--host-only` prints)."""
    from mgbench.datasets.pillow_build import pillow_build

    return {"build": pillow_build(), "rates": {str(count): rate(jobs, count) for count in process_counts}}


def host_rows(python: str, argv: list[str]) -> list[Row]:
    """The host rows of `python`, measured in that interpreter (this script run with `--host-only`)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(PROJECT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([python, __file__, *argv, "--host-only"], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{python} failed:\n{done.stderr}")
    found = json.loads(done.stdout)
    return [
        Row(found["build"], f"{count} CPU process(es)", total, total / int(count), cpu_ms, python)
        for count, (total, cpu_ms) in found["rates"].items()
    ]


def gpu_row(jobs: list[tuple[str, int]], batch: int) -> Row | None:
    """One GPU's images/s decoding and cropping `jobs` in lists of `batch`; None without CUDA."""
    try:
        import torch
        import torchvision
        from torchvision.io import ImageReadMode, decode_jpeg, read_file
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    from mgbench.datasets.images import read_header
    from mgbench.frameworks.pytorch.device_crop import CropPlan, crop_plan, planned_crops

    augmentation = Augmentation.for_input(INPUT_SIZE)
    device = torch.device("cuda")
    encoded = [read_file(path) for path, _ in jobs]
    sizes = [read_header(path).size for path, _ in jobs]
    drawn = [augmentation.train_window(size, 0, 0, index) for size, (_, index) in zip(sizes, jobs, strict=True)]
    windows = np.stack([window.as_array() for window in drawn])
    shapes = np.array([(3, height, width) for width, height in sizes], dtype=np.int64)
    # Each batch's crop planned beforehand, as the loader's workers plan it beside the file reads.
    batches = [
        (encoded[i : i + batch], crop_plan(shapes[i : i + batch], windows[i : i + batch], INPUT_SIZE))
        for i in range(0, len(jobs) - batch + 1, batch)
    ]
    if not batches:
        raise SystemExit(f"--gpu-batch {batch} is more than the {len(jobs)} images")

    def decode(data: list[torch.Tensor], plan: CropPlan) -> None:
        torch.cuda.synchronize(device)
        planned_crops(decode_jpeg(data, mode=ImageReadMode.RGB, device=device), plan, INPUT_SIZE)

    decode(*batches[0])
    torch.cuda.synchronize(device)
    start = time.perf_counter()
    for data, plan in batches:
        decode(data, plan)
    torch.cuda.synchronize(device)
    total = len(batches) * batch / (time.perf_counter() - start)
    where = f"1 GPU ({torch.cuda.get_device_name(device)}), lists of {batch}"
    return Row(f"torchvision {torchvision.__version__} decode_jpeg", where, total, total, None, sys.executable)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", help="a --dataset string: chestxray:DIR, imagefolder:DIR, labels:FILE")
    parser.add_argument("--processes", default="1,15", help="comma-separated process counts")
    parser.add_argument("--images", type=int, default=1500)
    parser.add_argument("--python", action="append", help="an interpreter to time the host in (repeatable)")
    parser.add_argument("--gpu-batch", type=int, default=128, help="images per decode_jpeg call on the GPU")
    parser.add_argument("--host-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    description = describe_dataset(args.dataset)
    if description is None:
        raise SystemExit("synthetic data has nothing to decode")
    jobs = [(path, index) for index, path in enumerate(description.train.files[: args.images])]
    process_counts = [int(count) for count in args.processes.split(",")]
    if args.host_only:
        print(json.dumps(host_rates(jobs, process_counts)))
        return
    shared = [args.dataset, "--processes", args.processes, "--images", str(args.images)]
    rows = [row for python in args.python or [sys.executable] for row in host_rows(python, shared)]
    rows += [row for row in [gpu_row(jobs, args.gpu_batch)] if row is not None]
    print(f"{args.dataset}: {len(jobs)} images, decode + {INPUT_SIZE} px crop + flip")
    print(f"{'decoder':<34} {'where':<44} {'img/s':>7} {'per process/GPU':>15} {'CPU ms/img':>10}  interpreter")
    for row in rows:
        cpu = "-" if row.cpu_ms_per_image is None else f"{row.cpu_ms_per_image:.2f}"
        print(
            f"{row.decoder:<34} {row.where:<44} {row.images_per_second:>7.0f} {row.per_unit:>15.0f} {cpu:>10}"
            f"  {row.interpreter}"
        )


if __name__ == "__main__":
    main()
