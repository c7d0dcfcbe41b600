"""An ImageNet-style class folder of JPEGs for real-data benchmarks: `train/<class>/*.jpg`.

`python3 benchmarks/make_jpeg_folder.py DST --classes 100 --per-class 60`. Each image is
ImageNet's typical size (400x350, RGB, quality 90) with smooth colour fields and grain, so
its decode costs what a photograph's does rather than what a flat image's does. Drawn from
(seed, class, index) in worker processes; refuses a DST that exists.
"""

from __future__ import annotations

import argparse
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from PIL import Image

WIDTH, HEIGHT = 400, 350


def draw(job: tuple[Path, int, int, int]) -> None:
    folder, seed, label, index = job
    rng = np.random.default_rng((seed, label, index))
    y, x = np.mgrid[0:HEIGHT, 0:WIDTH].astype(np.float32)
    phases = rng.uniform(0, 2 * np.pi, size=(3, 2))
    freqs = rng.uniform(0.005, 0.05, size=(3, 2))
    field = np.stack(
        [np.sin(x * freqs[c, 0] + phases[c, 0]) + np.cos(y * freqs[c, 1] + phases[c, 1]) for c in range(3)], axis=-1
    )
    grain = rng.normal(0, 0.25, size=field.shape)
    pixels = np.clip((field + grain + 2) * 63.75, 0, 255).astype(np.uint8)
    Image.fromarray(pixels, "RGB").save(folder / f"{label:04d}_{index:05d}.jpg", quality=90)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dst", type=Path)
    parser.add_argument("--classes", type=int, default=100)
    parser.add_argument("--per-class", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.dst.exists():
        raise SystemExit(f"{args.dst} exists; choose a new folder")
    jobs = []
    for label in range(args.classes):
        folder = args.dst / "train" / f"class{label:04d}"
        folder.mkdir(parents=True)
        jobs += [(folder, args.seed, label, index) for index in range(args.per_class)]
    with ProcessPoolExecutor(os.cpu_count()) as pool:
        list(pool.map(draw, jobs, chunksize=64))
    print(f"{len(jobs)} JPEGs in {args.dst} (--dataset imagefolder:{args.dst})")


if __name__ == "__main__":
    main()
