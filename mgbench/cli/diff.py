"""`mgbench diff OLD NEW`: two run folders set against each other (`reports.diff`), for a regression check.

Prints per matched run its images/sec in each folder with their spreads and the change (and with
`--epochs` the time to train), says what the spread is (the steady rate's interval, or p10-p90 of
single steps for runs of a folder written before intervals), names the runs found in one folder
only and what else sets the folders apart (job, machine, versions), and exits 1 where a run of
NEW is slower than OLD beyond the spread, or by more than `--fail-above PCT`; else 0. Both
folders are read only.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from rich.table import Table
from rich.text import Text

from mgbench.core.errors import UsageError
from mgbench.records.runfolder import RunFolder
from mgbench.reports.compact import say
from mgbench.reports.diff import STEPS, FolderDiff, RowChange, diff_folders
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
    parser.set_defaults(handler=handle)


def _change_text(change: float | None) -> str:
    return "-" if change is None else f"{change:+.1%}"


def changes_table(diff: FolderDiff, fail_above: float | None) -> Table:
    """One line per run in both folders: images/sec in each with its spread (`spread_note`), the
    change, the time to train where a folder trained in epochs, and how NEW stands against OLD."""
    trained = any(change.old_train is not None or change.new_train is not None for change in diff.changes)
    table = Table()
    table.add_column("run", no_wrap=True)
    for header in ("OLD img/s (spread)", "NEW img/s (spread)", "change"):
        table.add_column(header, justify="right", no_wrap=True)
    if trained:
        for header in ("OLD train s", "NEW train s", "change"):
            table.add_column(header, justify="right", no_wrap=True)
    table.add_column("NEW against OLD")
    for change in diff.changes:
        cells = [change.run_id, change.old_rate.text("{:,.1f}"), change.new_rate.text("{:,.1f}")]
        cells.append(_change_text(change.rate_change))
        if trained:
            cells += [_seconds(change.old_train), _seconds(change.new_train), _change_text(change.train_change)]
        cells.append(change.regression(fail_above) or change.reading())
        table.add_row(*(Text(cell) for cell in cells))
    return table


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}"


def spread_note(diff: FolderDiff) -> str:
    """What the table's spreads are: the steady rate's interval, and the runs where a folder has
    none, whose spread is the p10-p90 of their single steps."""
    measured = [change for change in diff.changes if None not in (change.old_rate.value, change.new_rate.value)]
    fallen_back = [change.run_id for change in measured if change.old_rate.of == STEPS]
    note = "spread: the steady rate's interval (slowest-fastest third of any round's steady window, at least ±1%)"
    if fallen_back and len(fallen_back) == len(measured):
        return "spread: p10-p90 of single steps (a folder written before the steady rate's interval was measured)"
    if fallen_back:
        return f"{note}; p10-p90 of single steps for {', '.join(fallen_back)} (a folder's row has no interval)"
    return note


def conclusion(regressions: list[tuple[RowChange, str]], compared: int, fail_above: float | None) -> str:
    """The last line: which runs of NEW are worse, or that none is."""
    rule = f"by more than {fail_above:g}%" if fail_above is not None else "beyond the spread"
    if not regressions:
        return f"No run of NEW is slower than in OLD {rule} ({compared} compared)."
    named = "; ".join(f"{change.run_id}: {why}" for change, why in regressions)
    return f"{len(regressions)} of {compared} runs of NEW are worse than in OLD: {named}."


def handle(args: argparse.Namespace) -> int:
    folders = []
    for root in (args.old, args.new):
        with RunFolder(root).writing():  # read only, an unreadable file one line all the same
            folders.append(load_run_folder(root))
    diff = diff_folders(*folders)
    if not diff.changes:
        raise UsageError(f"no run of {args.old} is in {args.new} (runs match by framework, strategy and devices)")
    console = table_console()
    console.print(changes_table(diff, args.fail_above))
    say(console, spread_note(diff))
    for label, runs in (("only in OLD", diff.only_old), ("only in NEW", diff.only_new)):
        if runs:
            say(console, f"{label}: {', '.join(runs)}")
    for label, differences in (
        ("job differs", diff.job),
        ("machine differs", diff.machine),
        ("versions differ", diff.versions),
    ):
        if differences:
            say(console, f"{label}: {'; '.join(differences)}")
    regressions = diff.regressions(args.fail_above)
    say(console, conclusion(regressions, len(diff.changes), args.fail_above))
    return SLOWER_EXIT_CODE if regressions else 0
