"""How many training images per second this host's cores decode and augment, through the shared
`Augmentation` every framework's loader calls: `python3 benchmarks/decode_rate.py DATASET
[--processes 1,15] [--images 1500]`.

A loader can deliver no more than this, whatever its mechanics; a real-data row slower than its
synthetic twin while its input wait is high is bound here. Each process count times the same
images (the first `--images` of the training split, epoch 0) in that many worker processes and
prints images/s in all and per process, so the per-core cost at 1 process and with every core
busy (shared caches, hyperthreads, clocks) shows side by side.
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor

from mgbench.datasets.augment import Augmentation
from mgbench.datasets.resolve import describe_dataset

INPUT_SIZE = 224


def augment(job: tuple[str, int]) -> int:
    path, index = job
    return Augmentation.for_input(INPUT_SIZE).train_pixels(path, 0, 0, index).size


def rate(jobs: list[tuple[str, int]], processes: int) -> float:
    """Images per second over `jobs` in `processes` workers, the pool started before the clock."""
    with ProcessPoolExecutor(processes) as pool:
        list(pool.map(augment, jobs[: 2 * processes]))
        start = time.perf_counter()
        list(pool.map(augment, jobs, chunksize=8))
        return len(jobs) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", help="a --dataset string: chestxray:DIR, imagefolder:DIR, labels:FILE")
    parser.add_argument("--processes", default="1,15", help="comma-separated process counts")
    parser.add_argument("--images", type=int, default=1500)
    args = parser.parse_args()
    description = describe_dataset(args.dataset)
    if description is None:
        raise SystemExit("synthetic data has nothing to decode")
    jobs = [(path, index) for index, path in enumerate(description.train.files[: args.images])]
    for processes in (int(count) for count in args.processes.split(",")):
        total = rate(jobs, processes)
        print(f"{args.dataset} {processes} process(es): {total:.0f} img/s, {total / processes:.0f} per process")


if __name__ == "__main__":
    main()
