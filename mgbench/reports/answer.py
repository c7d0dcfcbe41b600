"""The compare's answer for a script: `--format json` of `compare` and `report`.

The same objects the console and the report show, in one JSON object of a stable shape
(`ANSWER_VERSION`, documented in docs/reports.md): the verdict sentence, the winner (the first
line of the compact summary, where it has the ranked figure at the largest device count), the
lines the winner is ranked among, each run's figures with their spreads, and the warnings. A key
whose value the compare did not measure is null, never left out, so a script reads every key of
every answer alike. `ties` and each row's `rounds` are kept for figures that rounds give (a
compare repeated, each figure with its spread across rounds): empty and null until a compare
holds them.
"""

from __future__ import annotations

from typing import Any, Protocol

import pandas as pd

from mgbench.reports.cells import number
from mgbench.reports.ranking import Ranking, split_metric
from mgbench.reports.readings import held_back
from mgbench.reports.same_start import same_start_sentence
from mgbench.reports.summary import row_warnings
from mgbench.reports.verdict import verdict

ANSWER_VERSION = 1
"""Raised when a key changes meaning or goes; adding a key keeps it."""
STEP_SPREAD = "p10-p90 of single steps"
"""What a row's `spread` is: its steady steps' 10th to 90th percentile rate."""


class Summary(Protocol):
    """What the answer reads of a `compact.CompactSummary` (named by its shape: compact writes
    the answer, so importing it here would be a cycle)."""

    title: str
    notes: list[str]
    on_gpus: bool
    ranking: Ranking
    counts: list[int]

    def to_records(self) -> list[dict[str, object]]: ...


def winner(summary: Summary) -> dict[str, Any] | None:
    """The first line at the largest device count, with its ranked figure; None where no line has it."""
    lines, ranked = summary.to_records(), summary.ranking.ranked
    if not lines:
        return None
    top = summary.counts[-1]
    first = lines[0]
    figure = first.get(f"{ranked}_{top}dev")
    if figure is None:
        return None
    return {"framework": first["framework"], "strategy": first["strategy"], "devices": top, ranked: figure}


def _figure(row: pd.Series, name: str) -> float | None:
    return number(row.get(name))


def row_answer(row: pd.Series) -> dict[str, Any]:
    """One run's figures: its rate with the spread of its steps, scaling, time to train (to the
    target) and test metrics, utilisation, what holds it back, and its warnings."""
    held = held_back(row)
    error = str(row.get("error") or "").splitlines()
    tests = row.get("test_metrics")
    return {
        "run_id": row["run_id"],
        "framework": row["framework"],
        "strategy": row["strategy"],
        "devices": int(row["devices"]),
        "device_kind": row["device_kind"],
        "status": row["status"],
        "error": error[0] if error else None,
        "images_per_sec": _figure(row, "images_per_sec"),
        "spread": {
            "of": STEP_SPREAD,
            "low": _figure(row, "images_per_sec_p10"),
            "high": _figure(row, "images_per_sec_p90"),
        },
        "rounds": None,
        "speedup": _figure(row, "speedup"),
        "scaling_efficiency_fraction": _figure(row, "scaling_efficiency_fraction"),
        "time_to_train_seconds": _figure(row, "time_to_train_seconds"),
        "time_to_target_seconds": _figure(row, "time_to_target_seconds"),
        "test_auc": number(split_metric(tests, "auc")),
        "test_top1": number(split_metric(tests, "top1")),
        "utilisation": {
            "median_pct": _figure(row, "utilisation_pct"),
            "p10_pct": _figure(row, "utilisation_p10_pct"),
            "p90_pct": _figure(row, "utilisation_p90_pct"),
            "source": row.get("utilisation_source") if isinstance(row.get("utilisation_source"), str) else None,
            "memory_used_mib": _figure(row, "memory_used_mib"),
        },
        "held_back_by": None
        if held is None
        else {"name": held.name, "label": held.label, "fraction": held.fraction, "source": held.source},
        "warnings": row_warnings(row),
    }


def answer(summary: Summary, frame: pd.DataFrame) -> dict[str, Any]:
    """The whole answer: every key always present (`ANSWER_VERSION`)."""
    rows = [row_answer(row) for _, row in frame.iterrows()]
    return {
        "version": ANSWER_VERSION,
        "title": summary.title,
        "ranked_by": summary.ranking.ranked,
        "higher_is_better": summary.ranking.descending,
        "on_gpus": summary.on_gpus,
        "verdict": verdict(summary),
        "winner": winner(summary),
        "ties": [],
        "lines": summary.to_records(),
        "rows": rows,
        "warnings": [{"run_id": row["run_id"], "warning": warning} for row in rows for warning in row["warnings"]],
        "notes": summary.notes,
        "same_start": same_start_sentence(frame),
    }
