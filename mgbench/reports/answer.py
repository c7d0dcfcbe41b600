"""The compare's answer for a script: `--format json` of `compare` and `report`.

The same objects the console and the report show, in one JSON object of a stable shape
(`ANSWER_VERSION`, documented in docs/reports.md): the verdict's sentence and its parts
(`verdict.Verdict`: the winner, the lines that tie with it, the runner-up and the winner's lead,
scaling, what holds it back, hints and caveats), the lines they are ranked among, each run's
figures with the steady rate's interval, its rounds and the spread of its single steps, and the
warnings. A key whose value the compare did not measure is null (or an empty list), never left
out, so a script reads every key of every answer alike; so is a figure with no finite value (a
lead over a line at 1e-310 img/s overflows), so the answer is JSON (which has no NaN or Infinity).
"""

from __future__ import annotations

from typing import Any, Protocol

import pandas as pd

from mgbench.measure.metrics import defined
from mgbench.reports.cells import number
from mgbench.reports.columns import Col
from mgbench.reports.ranking import split_metric
from mgbench.reports.readings import held_back
from mgbench.reports.same_start import same_start_sentence
from mgbench.reports.summary import row_warnings
from mgbench.reports.units import frame_unit, mfu_sentence
from mgbench.reports.verdict import CompactSummary, judge

ANSWER_VERSION = 1
"""Raised when a key changes meaning or goes; adding a key keeps it."""
STEP_SPREAD = "p10-p90 of single steps"
"""What a row's `spread` is: its steady steps' 10th to 90th percentile rate."""
RATE_INTERVAL = "slowest and fastest third of any round's steady window"
"""What a row's `interval` is: the steady rate's own (`samples_per_sec_low`, `_high`)."""
VERDICT_PARTS = ("winner", "ties", "runner_up", "lead", "scaling", "held_back", "compiling", "hints", "caveats")
"""The parts of `Verdict.to_dict` the answer holds beside the sentence (`verdict`)."""


class Summary(CompactSummary, Protocol):
    """What the answer reads of a `compact.CompactSummary` (named by its shape: compact writes
    the answer, so importing it here would be a cycle)."""

    title: str
    notes: list[str]


def _figure(row: pd.Series, name: str) -> float | None:
    return number(row.get(name))


def _count(row: pd.Series, name: str) -> int | None:
    value = number(row.get(name))
    return None if value is None else int(value)


def _figures(row: pd.Series, name: str) -> list[float | None]:
    """A list a row holds (each round's figure), [] where it holds none."""
    values = row.get(name)
    return [number(value) for value in values] if isinstance(values, list) else []


def row_answer(row: pd.Series) -> dict[str, Any]:
    """One run's figures: its steady rate with its interval and the spread of its steps, its rounds
    and each round's figures, scaling, time to train (to the target) and test metrics,
    utilisation, what holds it back, and its warnings."""
    held = held_back(row)
    error = row[Col.ERROR].splitlines() if isinstance(row.get(Col.ERROR), str) else []  # NaN beside a failed row
    tests = row.get(Col.TEST_METRICS)
    return {
        "run_id": row[Col.RUN_ID],
        "framework": row[Col.FRAMEWORK],
        "strategy": row[Col.STRATEGY],
        "devices": int(row[Col.DEVICES]),
        "device_kind": row[Col.DEVICE_KIND],
        "status": row[Col.STATUS],
        "error": error[0] if error else None,
        "samples_per_sec": _figure(row, "samples_per_sec"),
        "interval": {
            "of": RATE_INTERVAL,
            "low": _figure(row, "samples_per_sec_low"),
            "high": _figure(row, "samples_per_sec_high"),
        },
        "spread": {
            "of": STEP_SPREAD,
            "low": _figure(row, "samples_per_sec_p10"),
            "high": _figure(row, "samples_per_sec_p90"),
        },
        "rounds": _count(row, "rounds"),
        "round_samples_per_sec": _figures(row, "round_samples_per_sec"),
        "round_time_to_train_seconds": _figures(row, "round_time_to_train_seconds"),
        "round_time_to_target_seconds": _figures(row, "round_time_to_target_seconds"),
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
            "source": row.get(Col.UTILISATION_SOURCE) if isinstance(row.get(Col.UTILISATION_SOURCE), str) else None,
            "memory_used_mib": _figure(row, "memory_used_mib"),
        },
        "held_back_by": None
        if held is None
        else {"name": held.name, "label": held.label, "fraction": held.fraction, "source": held.source},
        "warnings": row_warnings(row),
    }


def answer(summary: Summary, frame: pd.DataFrame) -> dict[str, Any]:
    """The whole answer: every key always present (`ANSWER_VERSION`), every number finite or null."""
    rows = [row_answer(row) for _, row in frame.iterrows()]
    unit = frame_unit(frame)
    judged = judge(summary).to_dict()
    whole = {
        "version": ANSWER_VERSION,
        "title": summary.title,
        "ranked_by": summary.ranking.ranked,
        "higher_is_better": summary.ranking.descending,
        "on_gpus": summary.on_gpus,
        "verdict": judged["text"],
        **{part: judged[part] for part in VERDICT_PARTS},
        "lines": summary.to_records(),
        "rows": rows,
        "warnings": [{"run_id": row[Col.RUN_ID], "warning": warning} for row in rows for warning in row[Col.WARNINGS]],
        "notes": summary.notes,
        "same_start": same_start_sentence(frame),
        "rate_unit": {"label": unit.label, "per_sample": unit.per_sample},
        "mfu": mfu_sentence(frame),
    }
    return defined(whole)[0]
