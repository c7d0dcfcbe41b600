"""`mgbench report RUN_DIR`: charts and a self-contained report.html for a run folder.

`compare` writes the report itself; this verb rebuilds it, e.g. for a folder copied from a
GPU machine or one whose compare was interrupted. With `--format` it also prints the folder's
compact summary, for a reader (`table`, `md`) or a script (`csv`, `json`). A folder it
cannot write (read-only, disk full) or another mgbench writes (a compare still running) is
one line and exit code 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mgbench.common.runfolder import RunFolder
from mgbench.reports.compact import FORMATS, print_summary
from mgbench.reports.figures import job_title
from mgbench.reports.html import write_report
from mgbench.reports.runfolder import load_run_folder


def add_format_option(parser: argparse.ArgumentParser, default: str | None = "table") -> None:
    """`--format`, shared by `compare` and `report`."""
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default=default,
        help="the summary printed: table (one line per framework/strategy, fastest first), md, csv or json"
        + (f" (default {default})" if default else ""),
    )


def register(verbs: argparse._SubParsersAction) -> None:
    parser = verbs.add_parser("report", help="write charts/ and report.html for a run folder")
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a folder written by `mgbench compare`")
    add_format_option(parser, default=None)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    with RunFolder(args.run_dir).claimed():
        path = write_report(args.run_dir)
    if args.format is None:
        print(path)
        return 0
    frame = load_run_folder(args.run_dir).frame
    print_summary(frame, job_title(frame), args.format)
    print(f"report: {path}", file=sys.stderr)
    return 0
