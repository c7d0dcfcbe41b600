"""How a report prints a figure, and what it prints for one without a value.

A row writes a figure that has no value as null (its `warnings` say why: `RunResult.to_record`),
which a frame holds as None or NaN. Every table of a report reads figures through `number` and
prints a missing one as `MISSING`, so a gap shows as a dash, never as `nan` or a crash.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from mgbench.reports.columns import Col

MISSING = "-"


def number(value: object) -> float | None:
    """A figure as a float, None where it has none: null in the row, NaN in a frame's column."""
    return float(value) if isinstance(value, int | float) and not pd.isna(value) else None


def figure_text(value: object, pattern: str) -> str:
    """`value` in `pattern` (`{:.1f}`), `MISSING` where it has no value."""
    figure = number(value)
    return MISSING if figure is None else pattern.format(figure)


def run_label(row: Mapping[str, Any]) -> str:
    """`framework strategy xN`: a run as tables, notes, legends and axis ticks name it."""
    return f"{row[Col.FRAMEWORK]} {row[Col.STRATEGY]} x{int(row[Col.DEVICES])}"
