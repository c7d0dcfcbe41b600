"""`mgbench diff OLD NEW`: two run folders set against each other (`reports.diff`), for a regression check.

Prints per matched run its rate in each folder (img/s, or a language model's tokens/s) with their
spreads and the change (and with `--epochs` the time to train), says what the spread is (the
steady rate's interval, or p10-p90 of single steps for runs of a folder written before
intervals), names the runs found in one folder
only, what else sets the folders apart (job, machine, versions) and what reading either folder
left out, and exits 1 where a run of NEW is slower than OLD beyond the spread, or by more than
`--fail-above PCT`, or did not finish or has no row where OLD's did; else 0. `--format md` or
`json` prints the same answer for a CI comment or a script (`reports.diff_output`). Both folders
are read only.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from mgbench.core.errors import UsageError
from mgbench.records.runfolder import RunFolder
from mgbench.reports.compact import say
from mgbench.reports.diff import diff_folders
from mgbench.reports.diff_output import FORMATS, DiffAnswer, left_out_note
from mgbench.reports.folder_data import load_run_folder
from mgbench.reports.summary import table_console

SLOWER_EXIT_CODE = 1


def percentage(text: str) -> float:
    """`--fail-above`'s value: a percentage, 0 or more."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"takes a percentage, not {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"takes a percentage of 0 or more, not {text!r}")
    return value


def register(verbs: argparse._SubParsersAction) -> None:
    parser = verbs.add_parser(
        "diff", help="set two run folders against each other; exit 1 where a run of NEW is slower than in OLD"
    )
    parser.add_argument("old", type=Path, metavar="OLD", help="the run folder to compare against (before)")
    parser.add_argument("new", type=Path, metavar="NEW", help="the run folder to check (after)")
    parser.add_argument(
        "--fail-above",
        type=percentage,
        metavar="PCT",
        help="fail where a run of NEW is more than PCT%% slower (or longer to train) than in OLD, whatever "
        "the spread (default: fail where NEW's spread lies wholly below OLD's: the steady rate's interval, "
        "or p10-p90 of single steps where a folder has no interval)",
    )
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="table",
        help="table: sized to the terminal; md: a Markdown table for a CI comment; json: the answer for a "
        "script, one entry per run under `runs` (default: table)",
    )
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    folders = []
    for root in (args.old, args.new):
        with RunFolder(root).writing():  # read only, an unreadable file one line all the same
            folders.append(load_run_folder(root))
    old, new = folders
    diff = diff_folders(old, new)
    if not diff.matched:
        raise UsageError(f"no run of {args.old} is in {args.new} (runs match by framework, strategy and devices)")
    answer = DiffAnswer(diff, old, new, args.fail_above)
    if args.format == "json":
        sys.stdout.write(answer.to_json())
    elif args.format == "md":
        sys.stdout.write(answer.to_markdown())
    else:
        console = table_console()
        table, left_out = answer.table(console.width)
        console.print(table)
        if left_out:
            say(console, left_out_note(left_out))
        for line in answer.sentences():
            say(console, line)
    return SLOWER_EXIT_CODE if diff.regressions(args.fail_above) else 0
