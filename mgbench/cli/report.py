"""`mgbench report RUN_DIR`: charts and a self-contained report.html for a run folder.

`compare` writes the report itself; this verb rebuilds it, e.g. for a folder copied from a
GPU machine or one whose compare was interrupted. A folder it cannot write (read-only, disk
full) is one line and exit code 2.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mgbench.common.runfolder import RunFolder
from mgbench.reports.html import write_report


def register(verbs: argparse._SubParsersAction) -> None:
    parser = verbs.add_parser("report", help="write charts/ and report.html for a run folder")
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a folder written by `mgbench compare`")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    with RunFolder(args.run_dir).writing():
        print(write_report(args.run_dir))
    return 0
