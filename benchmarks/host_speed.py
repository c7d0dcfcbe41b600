"""A timeline of how fast one core of this host runs plain Python, to read host-bound step times
against: `python3 benchmarks/host_speed.py LOG &` (stops when killed); `--summary` prints the
p10, median and p90 of a LOG written so.

Every `--every` seconds it times a fixed pure-Python loop (about 20 ms on a 3 GHz core) and
appends `unix_time milliseconds` to LOG. Eager DenseNet-121 steps are bound by the host
launching kernels; where this loop's time rises with them, the host itself slowed (its clock,
or neighbours sharing its cores), not the run. It costs about 1% of one core.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

LOOP = 400_000


def loop_ms() -> float:
    start = time.perf_counter()
    total = 0
    for value in range(LOOP):
        total += value & 7
    return (time.perf_counter() - start) * 1e3


def summary(log: Path) -> str:
    """The loop's p10, median and p90 in ms over the samples of `log`, and their count."""
    milliseconds = np.loadtxt(log, ndmin=2)[:, 1]
    p10, median, p90 = np.percentile(milliseconds, [10, 50, 90])
    return f"host loop ms: p10 {p10:.1f}, median {median:.1f}, p90 {p90:.1f} over {len(milliseconds)} samples"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", type=Path)
    parser.add_argument("--every", type=float, default=2.0)
    parser.add_argument("--summary", action="store_true", help="summarise LOG instead of writing to it")
    args = parser.parse_args()
    if args.summary:
        print(summary(args.log))
        return
    with open(args.log, "a", buffering=1) as log:
        while True:
            log.write(f"{time.time():.1f} {loop_ms():.2f}\n")
            time.sleep(args.every)


if __name__ == "__main__":
    main()
