"""The one order a report shows runs in: the compact table's lines, fastest first (its ranking),
each line's runs by device count. The tables and the charts that list runs one by one follow it,
so a run sits at the same place in each."""

from __future__ import annotations

import pandas as pd

from mgbench.reports.columns import Col
from mgbench.reports.compact import compact_summary
from mgbench.reports.summary import GROUP


def in_line_order(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame`'s rows in the compact table's order (`compact_summary`'s lines, ranked), each
    line's rows by device count."""
    lines = compact_summary(frame).lines
    rank = {(line["framework"], line["strategy"]): place for place, line in enumerate(lines[GROUP].to_dict("records"))}
    places = [rank.get((row[Col.FRAMEWORK], row[Col.STRATEGY]), len(rank)) for _, row in frame.iterrows()]
    order = frame.assign(_line=places).sort_values(["_line", Col.DEVICES], kind="stable")
    return order.drop(columns="_line")
