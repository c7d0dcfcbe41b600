"""`mgbench project RUN_DIR --gpus 8,64,512 --interconnect NAME|bandwidth.json[+NETWORK]`: the
folder's rows projected to device counts this machine does not have, into projection.json and
the report, holding the folder's lock (`RunFolder.claimed`) while it reads and writes it."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any, TypeGuard

import pandas as pd
from rich.table import Table

from mgbench.cli.options import device_counts
from mgbench.core.errors import UsageError
from mgbench.core.inputs import RateUnit
from mgbench.projection.calibration import IMAGENET_TRAIN_IMAGES, not_projected_text, project_folder, write_projection
from mgbench.projection.interconnects import PRESETS, parse_interconnect
from mgbench.records.runfolder import RunFolder
from mgbench.reports.folder_data import load_run_folder
from mgbench.reports.html import write_report
from mgbench.reports.projection_table import projection_columns, series_notes, series_rows, series_title
from mgbench.reports.summary import table_console
from mgbench.reports.units import frame_unit

MAX_PROJECTED_DEVICES = 2**20
"""The most devices a projection takes: a million, past the largest training clusters built; a
count far beyond it leaves the integers numpy computes the charts with."""


def register(verbs: argparse._SubParsersAction) -> None:
    parser = verbs.add_parser("project", help="project a run folder's scaling to more GPUs and nodes (a model)")
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a folder written by `mgbench compare`")
    parser.add_argument("--gpus", default="8,64,512", help="device counts to project to (default 8,64,512)")
    parser.add_argument(
        "--interconnect",
        default=None,
        metavar="WITHIN[+ACROSS]",
        help=f"links within a node (a preset or a bandwidth.json) and between nodes (a preset); presets: "
        f"{', '.join(PRESETS)}; default: the run folder's bandwidth.json",
    )
    parser.add_argument("--gpus-per-node", type=int, default=8, help="GPUs a node holds (default 8)")
    parser.add_argument("--nics-per-node", type=int, default=1, help="network ports a node has (default 1)")
    parser.add_argument(
        "--epoch-images",
        type=int,
        default=IMAGENET_TRAIN_IMAGES,
        help=f"samples per epoch for the time per epoch: images, or a language model's sequences (of the run's "
        f"sequence length) (default {IMAGENET_TRAIN_IMAGES:,}: ImageNet-1k's training set)",
    )
    parser.set_defaults(handler=handle)


def parse_counts(text: str) -> list[int]:
    """The device counts to project to, in order: each from 1 to `MAX_PROJECTED_DEVICES`."""
    counts = sorted(device_counts(text))
    if counts[0] < 1 or counts[-1] > MAX_PROJECTED_DEVICES:
        raise UsageError(f"--gpus takes device counts of 1 to {MAX_PROJECTED_DEVICES:,}, got {text!r}")
    return counts


def check_measured(frame: pd.DataFrame) -> None:
    """The projection takes each ok row's step from its throughput (its global batch over
    samples per second) and splits it by its shares of compute and input wait (its breakdown's, else its
    input wait fraction): a row whose throughput is not a positive number (NaN, null, negative,
    zero: a damaged or edited row), or whose shares are not numbers from 0 to 1, would be
    projected into nonsense or stop the model with a traceback. The first such row is refused."""
    for _, row in frame[frame["status"] == "ok"].iterrows():
        rate = row["samples_per_sec"]
        if not _finite(rate) or rate <= 0:
            raise UsageError(f"{row['run_id']}: samples_per_sec {rate} is not a positive number; no step to project")
        if isinstance(row["breakdown"], dict):  # a breakdown there, whole or not, is what the model reads
            shares = {f"breakdown's {name}": row["breakdown"].get(name) for name in ("compute", "input_wait")}
        else:
            shares = {"input_wait_fraction": row["input_wait_fraction"] or 0.0}
        for name, share in shares.items():
            if not _finite(share) or not 0 <= share <= 1:
                raise UsageError(
                    f"{row['run_id']}: {name} {share} is not a share from 0 to 1; its step cannot be split"
                )


def _finite(value: object) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def print_series(series: dict[str, Any], unit: RateUnit) -> None:
    """A series' table and notes, its rates in `unit` (the folder's model's: `units.frame_unit`)."""
    table = Table(title=series_title(series))
    for column in projection_columns(unit):
        table.add_column(column, justify="left" if column == "limited by" else "right")
    for row in series_rows(series, unit):
        table.add_row(*row)
    console = table_console()
    console.print(table)
    for note in series_notes(series, unit):
        console.print(f"  {note}")


def handle(args: argparse.Namespace) -> int:
    counts = parse_counts(args.gpus)
    with RunFolder(args.run_dir).claimed():
        return project(args, counts)


def project(args: argparse.Namespace, counts: list[int]) -> int:
    """The projection of the folder's rows to `counts`, printed and written with the report."""
    data = load_run_folder(args.run_dir)
    check_measured(data.frame)
    target = parse_interconnect(
        args.interconnect, RunFolder(args.run_dir).bandwidth, args.gpus_per_node, args.nics_per_node
    )
    if args.epoch_images < 1:
        raise UsageError(f"--epoch-images must be at least 1, got {args.epoch_images}")
    projection = project_folder(data, target, counts, args.epoch_images)
    console = table_console()
    console.print(f"assumptions: {projection['assumptions']}")
    for series in projection["series"]:
        print_series(series, frame_unit(data.frame))
    for left_out in projection["not_projected"]:
        console.print(not_projected_text(left_out))
    console.print(f"written: {write_projection(args.run_dir, projection)}")
    console.print(f"report: {write_report(args.run_dir)}")
    return 0
