"""`mgbench prepare chestxray SRC DST`: resize the NIH images once, in parallel, keeping the labels."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from mgbench.cli.progress import interrupted, progress_bar
from mgbench.datasets.prepare import FORMATS, SKIPPED_FILE, prepare_chestxray


def register(verbs: argparse._SubParsersAction) -> None:
    parser = verbs.add_parser("prepare", help="resize a dataset once for training (chestxray)")
    parser.add_argument("kind", choices=("chestxray",), help="dataset layout")
    parser.add_argument("src", type=Path, help="folder with Data_Entry_2017.csv and the images")
    parser.add_argument("dst", type=Path, help="folder to write (images/, label file, split lists)")
    parser.add_argument("--size", type=int, default=264, help="shorter side in pixels (default 264)")
    parser.add_argument("--format", default="png", choices=tuple(FORMATS), help="image format (default png)")
    parser.add_argument("--workers", type=int, default=None, help="resizing processes (default: CPU count)")
    parser.add_argument(
        "--overwrite", action="store_true", help="replace what an earlier prepare wrote to DST (only that)"
    )
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    console = Console(stderr=True, soft_wrap=True)
    try:
        with progress_bar(console, "resizing") as show:
            report = prepare_chestxray(args.src, args.dst, args.size, args.format, args.workers, show, args.overwrite)
    except KeyboardInterrupt:
        return interrupted(args.dst)
    converted = ", ".join(f"{conversion}: {count}" for conversion, count in report.converted.items())
    if report.bit_depth is not None:
        converted += f"; wide pixels scaled as {report.bit_depth}-bit, 0-{2**report.bit_depth - 1} to 0-255"
    console.print(f"{report.written} images written to {args.dst}" + (f" ({converted})" if converted else ""))
    if report.skipped:
        console.print(
            f"[yellow]{len(report.skipped)} unreadable image(s) skipped (listed in {args.dst / SKIPPED_FILE}):[/]"
        )
        for reason in report.skipped:
            console.print(f"  {reason}")
    return 0
