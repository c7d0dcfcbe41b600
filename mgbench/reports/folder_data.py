"""Read a run folder for reporting, tolerating whatever a real folder can look like.

A folder may come from another machine, from a compare that was interrupted, or from runs
that failed before writing a trace. Reports must still be built from what is there, so this
module turns every gap into data the report can show (a planned run with no row becomes an
`interrupted` row, an unreadable line is counted, a missing or malformed trace is `None`)
instead of raising.
What is refused is a folder that is no run folder's: a `compare.json` that is not a plan, or a
name that would lead a file outside the folder (one line, exit code 2).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from mgbench.core.errors import UsageError
from mgbench.core.wording import counted
from mgbench.records.compare_plan import ComparePlan
from mgbench.records.results import RESULTS_FILE, RunResult, Status, current_name, read_run_rows
from mgbench.records.runfolder import RunFolder
from mgbench.records.utilisation import attach_utilisation, read_trace
from mgbench.reports.summary import results_frame

NOT_RUN_ERROR = "no result: the compare ended before this run finished"


def left_out(count: int) -> str:
    """`is left out` after one of what was counted, `are left out` after several."""
    return "is left out" if count == 1 else "are left out"


@dataclass
class RunFolderData:
    """Everything a report shows: one frame row per run (planned-but-missing runs included)."""

    root: Path
    results: list[RunResult]
    frame: pd.DataFrame
    command: str | None = None
    unreadable_lines: int = 0
    replaced_rows: int = 0
    """Rows left out because their run has a later row (`results.read_run_rows`)."""
    notes: list[str] = field(default_factory=list)

    def reading_notes(self) -> list[str]:
        """What reading `results.jsonl` left out, one sentence each: lines that are no whole row,
        and earlier rows of runs written again."""
        notes = []
        if self.unreadable_lines:
            notes.append(
                f"{counted(self.unreadable_lines, 'line')} of {RESULTS_FILE} could not be read and "
                f"{left_out(self.unreadable_lines)}."
            )
        if self.replaced_rows:
            notes.append(
                f"{counted(self.replaced_rows, 'earlier row')} of runs written again to {RESULTS_FILE} "
                f"{left_out(self.replaced_rows)}: each run's last row is read."
            )
        return notes

    def trace(self, run_id: str) -> pd.DataFrame | None:
        """The run's utilisation samples, or None where they cannot be read (`utilisation.read_trace`)."""
        return read_trace(RunFolder(self.root).trace(run_id))


def _planned(folder: RunFolder) -> ComparePlan:
    """The folder's plan; an empty one for a folder without `compare.json` (`mgbench run`'s)."""
    path = folder.compare_file
    return ComparePlan.read(path) if path.exists() else ComparePlan(None, [])


def load_run_folder(root: Path) -> RunFolderData:
    """The folder's results as a frame (speed-up and efficiency added) plus what the report notes.

    Fields a row carries beyond `RunResult` (e.g. `communication_fraction` from an adapter that
    measures it) are kept as extra columns, so charts can use them where they exist; fields an
    earlier version named otherwise (`results.current_name`) are read under their current name only.
    """
    if not root.exists():
        raise UsageError(f"run folder {root} does not exist")
    if not root.is_dir():
        raise UsageError(f"{root} is not a folder; give the run folder that compare wrote")
    folder = RunFolder(root)
    results_path = folder.results
    if not results_path.exists():
        raise UsageError(f"{root} has no {RESULTS_FILE}: not a run folder (or no run has finished yet)")
    records, results, unreadable, replaced = read_run_rows(results_path)  # a FIFO there: one line naming it
    if not results:
        raise UsageError(f"{results_path} holds no readable result rows")
    for result in results:
        if result.utilisation.utilisation_pct is None:  # a row written before rows held it
            attach_utilisation(result, folder.trace(result.run_id))
    plan = _planned(folder)
    notes = [*plan.left_out, *filter(None, [plan.job_shrink])]
    finished = {r.run_id for r in results}
    missing = [RunResult(c, Status.INTERRUPTED, error=NOT_RUN_ERROR) for c in plan.configs if c.run_id not in finished]
    frame = results_frame(results + missing)
    extra = pd.DataFrame(records).rename(columns=current_name).drop(columns=list(frame.columns), errors="ignore")
    frame = frame.join(extra)
    data = RunFolderData(root, results + missing, frame, plan.command, unreadable, replaced, notes)
    notes += data.reading_notes()
    if missing:
        notes.append(f"{len(missing)} planned run(s) have no result: the compare was interrupted or is still running.")
    return data
