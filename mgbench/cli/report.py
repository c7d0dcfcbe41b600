"""`mgbench report RUN_DIR`: charts and a self-contained report.html for a run folder.

`compare` writes the report itself; this verb rebuilds it, e.g. for a folder copied from a
GPU machine or one whose compare was interrupted; with `--out DIR` into a folder of its own,
reading the run folder only (a colleague's, a read-only copy). It prints the folder's compact
summary as `compare` ends on it (the table and its verdict), or with `--format` for a reader
(`md`) or a script (`csv`, `json`), then the report's path on stderr. A folder it
cannot write (read-only, disk full) or another mgbench writes (a compare still running) is
one line and exit code 2, and so is an `--out` that is a link to nothing (which it would write
through). A name that is not UTF-8 is printed as the OS shows it, its other bytes escaped.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from mgbench.core.errors import UsageError
from mgbench.core.wording import shown
from mgbench.records.runfolder import CHARTS_DIR, LOCK_FILE, REPORT_FILE, RunFolder
from mgbench.reports.compact import FORMATS, print_summary
from mgbench.reports.figures import job_title
from mgbench.reports.folder_data import load_run_folder
from mgbench.reports.html import write_folder_report


def add_format_option(parser: argparse.ArgumentParser) -> None:
    """`--format`, shared by `compare` and `report`."""
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="table",
        help="the summary printed: table (one line per framework/strategy, fastest first; the default), md, csv or json",
    )


def register(verbs: argparse._SubParsersAction) -> None:
    parser = verbs.add_parser("report", help="write charts/ and report.html for a run folder")
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a folder written by `mgbench compare`")
    parser.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="write charts/ and report.html into DIR (new, or one an earlier --out wrote) and leave RUN_DIR as it is",
    )
    add_format_option(parser)
    parser.set_defaults(handler=handle)


REPORT_FILES = {REPORT_FILE, CHARTS_DIR, LOCK_FILE}
"""What a folder `--out` writes holds: such a folder is written again, any other refused."""


def report_folder(run_dir: Path, out: Path | None) -> Path:
    """Where the report goes: the run folder, or `out` where it is a folder of its own, empty or
    holding only an earlier report; one inside the run folder (which it would change), holding
    anything else (which it could overwrite) or a link to nothing (which making the folder would
    write through) is one line."""
    if out is None or out.resolve() == run_dir.resolve():
        return run_dir
    if out.is_symlink() and not out.exists():
        raise UsageError(
            f"--out {out} is a link to {os.readlink(out)}, which does not exist: give a folder, not a dangling link"
        )
    if out.resolve().is_relative_to(run_dir.resolve()):
        raise UsageError(
            f"--out {out} is inside the run folder {run_dir}: give a folder outside it, or leave out --out"
        )
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is not a folder")
    if out.is_dir() and (others := sorted(p.name for p in out.iterdir() if p.name not in REPORT_FILES)):
        names = ", ".join(others[:3])
        raise UsageError(f"--out {out} holds other files ({names}): give a new or empty folder")
    return out


def handle(args: argparse.Namespace) -> int:
    with RunFolder(args.run_dir).writing():  # read only, an unreadable file one line all the same
        data = load_run_folder(args.run_dir)
    out = report_folder(args.run_dir, args.out)
    folder = RunFolder(out)
    with folder.claimed(create=True):
        path = write_folder_report(data, folder)
    print_summary(data.frame, job_title(data.frame), args.format)
    print(f"report: {shown(path)}", file=sys.stderr)
    return 0
