"""`mgbench diff`'s answer (`reports.diff.FolderDiff`) as its reader takes it: a terminal table
that fits the terminal, Markdown for a CI comment, JSON for a script.

Every form holds the same cells and sentences (`DiffAnswer`): one line per run, the spread note,
the runs in one folder only, what else sets the folders apart, what reading a folder left out,
and the conclusion. JSON writes each figure as a number or a real null, never NaN or Infinity,
and its `runs` list is one pandas row per run.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from rich.cells import cell_len
from rich.table import Table
from rich.text import Text

from mgbench.core.inputs import RateUnit
from mgbench.core.wording import counted
from mgbench.reports.diff import STEPS, FolderDiff, Measured, MemoryFigures, RowChange
from mgbench.reports.folder_data import RunFolderData
from mgbench.reports.units import frame_unit, language_model

FORMATS = ("table", "md", "json")
TABLE_PADDING = 3
"""Characters a rich table adds per column (a border and a space either side)."""


@dataclass(frozen=True)
class Column:
    """A column of the table: its header, its cells' key, and when it may be left out of a
    narrow terminal (0: never; higher first), since it holds figures the answer columns sum up."""

    header: str
    key: str
    numeric: bool = True
    drop_order: int = 0


def percent(change: float | None) -> str:
    return "-" if change is None else f"{change:+.1%}"


def seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}"


def verdict(change: RowChange, fail_above: float | None) -> str:
    """How NEW stands against OLD for one run: why it is worse, or how it stands against the spread."""
    return change.regression(fail_above) or change.reading()


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
    are = "is" if len(regressions) == 1 else "are"
    return f"{len(regressions)} of {counted(compared, 'run')} of NEW {are} worse than in OLD: {named}."


@dataclass
class DiffAnswer:
    """A diff's answer in the cells and sentences every form shows."""

    diff: FolderDiff
    old: RunFolderData
    new: RunFolderData
    fail_above: float | None

    @property
    def trained(self) -> bool:
        """Whether a folder trained in epochs: its time to train gets columns of its own."""
        return any(change.old_train is not None or change.new_train is not None for change in self.diff.changes)

    @property
    def memory(self) -> bool:
        """Whether the folders trained a language model and a row holds its memory figures: they
        get columns of their own (image rows' tables stay as they were)."""
        changes = self.diff.changes
        return language_model(self.new.frame) is not None and any(
            change.old_memory.known or change.new_memory.known for change in changes
        )

    @property
    def unit(self) -> RateUnit:
        """The unit the rates are shown in: NEW's model's (`units.frame_unit`); the folders trained
        one job, or the diff says where they differ."""
        return frame_unit(self.new.frame)

    def columns(self, spreads: bool = True) -> list[Column]:
        """The table's columns; without `spreads`, the rates without their spreads (a narrow terminal's)."""
        columns = [Column("run", "run", numeric=False)]
        label = self.unit.label
        if spreads:
            columns += [
                Column(f"OLD {label} (spread)", "old", drop_order=2),
                Column(f"NEW {label} (spread)", "new", drop_order=2),
            ]
        else:
            columns += [
                Column(f"OLD {label}", "old_rate", drop_order=2),
                Column(f"NEW {label}", "new_rate", drop_order=2),
            ]
        columns.append(Column("change", "change"))
        if self.trained:
            columns += [
                Column("OLD train s", "old_train", drop_order=1),
                Column("NEW train s", "new_train", drop_order=1),
            ]
            columns.append(Column("train change", "train_change"))
        if self.memory:
            columns += [
                Column("OLD peak/reserved GiB per GPU", "old_memory", drop_order=3),
                Column("NEW peak/reserved GiB per GPU", "new_memory", drop_order=3),
                Column("OLD max batch per GPU (est.)", "old_largest_batch", drop_order=3),
                Column("NEW max batch per GPU (est.)", "new_largest_batch", drop_order=3),
            ]
        return [*columns, Column("NEW against OLD", "verdict", numeric=False)]

    def cells(self, change: RowChange) -> dict[str, str]:
        per_sample = self.unit.per_sample
        old, new = change.old_rate.times(per_sample), change.new_rate.times(per_sample)
        return {
            "run": change.run_id,
            "old": old.text("{:,.1f}"),
            "new": new.text("{:,.1f}"),
            "old_rate": old.text("{:,.1f}", spread=False),
            "new_rate": new.text("{:,.1f}", spread=False),
            "change": percent(change.rate_change),
            "old_train": seconds(change.old_train),
            "new_train": seconds(change.new_train),
            "train_change": percent(change.train_change),
            "old_memory": memory_text(change.old_memory),
            "new_memory": memory_text(change.new_memory),
            "old_largest_batch": batch_text(change.old_memory.largest_batch),
            "new_largest_batch": batch_text(change.new_memory.largest_batch),
            "verdict": verdict(change, self.fail_above),
        }

    def rows(self) -> list[dict[str, str]]:
        return [self.cells(change) for change in self.diff.changes]

    def sentences(self) -> list[str]:
        """The lines under the table, the conclusion last."""
        diff = self.diff
        lines = [spread_note(diff)]
        lines += [f"{label}: {', '.join(runs)}" for label, runs in self._only() if runs]
        lines += [f"{label}: {'; '.join(items)}" for label, items in self._apart() if items]
        lines += [f"{label} ({data.root}): {note}" for label, data in self._folders() for note in data.reading_notes()]
        return [*lines, self.conclusion()]

    def conclusion(self) -> str:
        return conclusion(self.diff.regressions(self.fail_above), len(self.diff.changes), self.fail_above)

    def _only(self) -> list[tuple[str, list[str]]]:
        return [("only in OLD", self.diff.only_old), ("only in NEW", self.diff.only_new)]

    def _apart(self) -> list[tuple[str, list[str]]]:
        diff = self.diff
        return [("job differs", diff.job), ("machine differs", diff.machine), ("versions differ", diff.versions)]

    def _folders(self) -> list[tuple[str, RunFolderData]]:
        return [("OLD", self.old), ("NEW", self.new)]

    def to_json(self) -> str:
        """The answer as strict JSON (`json.loads` reads it; `pandas.DataFrame(answer["runs"])`
        is one row per run): figures as numbers, null where there is none."""
        regressions = self.diff.regressions(self.fail_above)
        answer = {
            "old": str(self.old.root),
            "new": str(self.new.root),
            "fail_above_pct": self.fail_above,
            "regressed": bool(regressions),
            "compared": len(self.diff.changes),
            "rate_unit": {"label": self.unit.label, "per_sample": self.unit.per_sample},
            "runs": [self._run_record(change) for change in self.diff.changes],
            "only_old": self.diff.only_old,
            "only_new": self.diff.only_new,
            "job": self.diff.job,
            "machine": self.diff.machine,
            "versions": self.diff.versions,
            "notes": {label: data.reading_notes() for label, data in self._folders()},
            "spread": spread_note(self.diff),
            "conclusion": self.conclusion(),
        }
        return json.dumps(answer, indent=2, allow_nan=False) + "\n"

    def _run_record(self, change: RowChange) -> dict[str, Any]:
        def rate(prefix: str, measured: Measured) -> dict[str, float | None]:
            return {
                f"{prefix}_samples_per_sec": finite(measured.value),
                f"{prefix}_samples_per_sec_low": finite(measured.low),
                f"{prefix}_samples_per_sec_high": finite(measured.high),
            }

        def memory(prefix: str, figures: MemoryFigures) -> dict[str, float | None]:
            return {
                f"{prefix}_peak_memory_bytes": finite(figures.peak),
                f"{prefix}_peak_memory_reserved_bytes": finite(figures.reserved),
                f"{prefix}_largest_batch_estimate": finite(figures.largest_batch),
            }

        return {
            "run_id": change.run_id,
            "old_status": change.old_status,
            "new_status": change.new_status,
            **rate("old", change.old_rate),
            **rate("new", change.new_rate),
            "spread": change.old_rate.of,
            "change": finite(change.rate_change),
            "old_time_to_train_seconds": finite(change.old_train),
            "new_time_to_train_seconds": finite(change.new_train),
            "train_change": finite(change.train_change),
            **memory("old", change.old_memory),
            **memory("new", change.new_memory),
            "reading": change.reading(),
            "regression": change.regression(self.fail_above),
        }

    def to_markdown(self) -> str:
        """A Markdown table and its sentences, for a CI comment."""
        columns = self.columns()
        header = "| " + " | ".join(column.header for column in columns) + " |"
        rule = "|" + "|".join("---:" if column.numeric else ":---" for column in columns) + "|"
        body = ["| " + " | ".join(_markdown_cell(row[c.key]) for c in columns) + " |" for row in self.rows()]
        sentences = "".join(f"\n{line}\n" for line in self.sentences())
        return "\n".join([header, rule, *body]) + "\n" + sentences

    def fitting_columns(self, width: int) -> tuple[list[Column], list[str]]:
        """The columns that fit `width` characters, each as wide as its widest cell (the verdict,
        which wraps, as its longest word), and what was left out to fit: the spreads first, then
        the figures' columns (train seconds, then the rates), before any is narrowed, so the
        answer columns (run, change, NEW against OLD) stay whole."""
        rows = self.rows()

        def needed(column: Column, text: str) -> int:
            return max(map(cell_len, text.split())) if column.key == "verdict" else cell_len(text)

        def fits(columns: list[Column]) -> bool:
            sizes = (max(needed(c, text) for text in [c.header, *(row[c.key] for row in rows)]) for c in columns)
            return sum(size + TABLE_PADDING for size in sizes) + 1 <= width

        kept = self.columns()
        if fits(kept):
            return kept, []
        kept, left_out = self.columns(spreads=False), ["the spreads"]
        for order in sorted({c.drop_order for c in kept if c.drop_order}, reverse=True):
            if fits(kept):
                break
            left_out += [c.header for c in kept if c.drop_order == order]
            kept = [c for c in kept if c.drop_order != order]
        return kept, left_out

    def table(self, width: int) -> tuple[Table, list[str]]:
        """The rich table for `width` characters, and what it left out to fit (`fitting_columns`)."""
        columns, left_out = self.fitting_columns(width)
        table = Table()
        for column in columns:
            table.add_column(
                column.header, justify="right" if column.numeric else "left", no_wrap=column.key != "verdict"
            )
        for row in self.rows():
            table.add_row(*(Text(row[column.key]) for column in columns))
        return table, left_out


def left_out_note(left_out: list[str]) -> str:
    """What a narrow terminal's table left out, and how to see it."""
    return f"left out at this width: {', '.join(left_out)}; see them with --format md (or a wider terminal)"


def memory_text(figures: MemoryFigures) -> str:
    """`peak/reserved` in GiB (`3.21/4.00`), a dash for either the row has none of."""
    if figures.peak is None and figures.reserved is None:
        return "-"
    return "/".join("-" if value is None else f"{value / 2**30:.2f}" for value in (figures.peak, figures.reserved))


def batch_text(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def finite(value: float | None) -> float | None:
    """A figure for strict JSON: None where it has no finite value."""
    return value if value is not None and math.isfinite(value) else None


def _markdown_cell(text: str) -> str:
    return text.replace("|", "\\|")
