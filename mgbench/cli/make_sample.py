"""`mgbench make-sample-chestxray DST`: a small ChestX-ray14 look-alike for demos, tests and CI."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from mgbench.cli.progress import interrupted, progress_bar
from mgbench.cli.values import seed
from mgbench.core.errors import UsageError
from mgbench.core.job import image_size_refusal
from mgbench.datasets.sample import make_sample

SMALLEST_SAMPLE = 32
"""The smallest side a sample is drawn at: its findings are shapes on a grid of cells."""
FEWEST_IMAGES = 10
"""The fewest images a sample holds: a training and a validation split, of patients apart."""
MOST_IMAGES = 1_000_000
"""The most images a sample holds: about nine times the 112,120 of the dataset it imitates. Every
image's labels and name are drawn in memory before the first is written, so a count past what a
machine holds would end in a MemoryError long after the command was given, or at once in numpy's
refusal of an array that large."""


def register(verbs: argparse._SubParsersAction) -> None:
    parser = verbs.add_parser(
        "make-sample-chestxray", help="write a small dataset in the NIH layout whose labels are learnable"
    )
    parser.add_argument("dst", type=Path, help="folder to write")
    parser.add_argument(
        "--n", type=int, default=512, help=f"number of images, {FEWEST_IMAGES} to {MOST_IMAGES:,} (default 512)"
    )
    parser.add_argument("--size", type=int, default=264, help="image side in pixels (default 264)")
    parser.add_argument(
        "--seed",
        type=seed,
        default=0,
        help="what every image and label is drawn from: the same seed writes the same bytes (default 0)",
    )
    parser.add_argument("--workers", type=int, default=None, help="drawing processes (default: CPU count)")
    parser.add_argument(
        "--overwrite", action="store_true", help="replace what an earlier make-sample wrote to DST (only that)"
    )
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    if not FEWEST_IMAGES <= args.n <= MOST_IMAGES:
        raise UsageError(
            f"--n takes {FEWEST_IMAGES} (a training and a validation split) to {MOST_IMAGES:,} images, got {args.n}"
        )
    if refusal := image_size_refusal(args.size, SMALLEST_SAMPLE):
        raise UsageError(f"--size: {refusal}")
    console = Console(stderr=True, soft_wrap=True)
    try:
        with progress_bar(console, "drawing") as show:
            make_sample(args.dst, args.n, args.size, args.seed, args.workers, show, args.overwrite)
    except KeyboardInterrupt:
        return interrupted(args.dst)
    console.print(f"{args.n} images in {args.dst} (--dataset chestxray:{args.dst})")
    return 0
