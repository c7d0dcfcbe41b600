"""A row's figure with the interval it was measured in: where two rows tie, and how many digits it shows.

The interval is what the row measured: for the steady rate, the slowest and fastest third of any
round's steady window (`samples_per_sec_low`, `samples_per_sec_high`); for a time to train or to a
target, the shortest and longest round (`round_time_to_train_seconds`, ...). It is never narrower
than `NOISE_FLOOR` either side of the figure: the closest two compares of one command on one
machine agree, and what no second compare would repeat is no difference between rows. Two rows
whose intervals overlap tie within noise, and nothing ranks them; a figure is shown to two
significant digits of its interval's half-width, so no digit is printed that the next compare
would change.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from mgbench.reports.cells import number
from mgbench.reports.columns import Col

NOISE_FLOOR = 0.01
"""The least half-width of an interval, as a share of its figure."""


@dataclass(frozen=True)
class Spread:
    """A figure and its interval (`low` <= `value` <= `high`), over `rounds` rounds."""

    value: float
    low: float
    high: float
    rounds: int = 1

    @classmethod
    def of(cls, value: float, low: float | None = None, high: float | None = None, rounds: int = 1) -> Spread:
        """`value` within its measured `low`-`high` (None or NaN: not measured), widened to `NOISE_FLOOR`."""
        floor = abs(value) * NOISE_FLOOR
        measured_low = value if low is None or math.isnan(low) else low
        measured_high = value if high is None or math.isnan(high) else high
        return cls(value, min(measured_low, value - floor), max(measured_high, value + floor), rounds)

    def times(self, factor: int) -> Spread:
        """The same figure and interval counted in a unit `factor` to a sample (a rate held in
        samples per second, shown in tokens per second): its digits scale with it."""
        return Spread(self.value * factor, self.low * factor, self.high * factor, self.rounds)

    def ties(self, other: Spread) -> bool:
        """Whether the two intervals overlap: neither figure can be told from the other."""
        return self.low <= other.high and other.low <= self.high

    @property
    def place(self) -> int:
        """The power of ten of the last digit shown: one below the half-width's leading digit."""
        half = (self.high - self.low) / 2
        return math.floor(math.log10(half)) - 1 if half > 0 else 0

    def text(self, value: float | None = None) -> str:
        """`value` (the figure by default) to `place`, with thousands separators: `4,279`, `15.90`."""
        shown = self.value if value is None else value
        if self.place >= 0:
            return f"{round(shown, -self.place):,.0f}"
        return f"{shown:,.{-self.place}f}"

    @property
    def range_text(self) -> str:
        """`4,236-4,322`: the interval at the figure's precision."""
        return f"{self.text(self.low)}-{self.text(self.high)}"

    def to_dict(self) -> dict[str, float | int]:
        return {"value": self.value, "low": self.low, "high": self.high, "rounds": self.rounds}


def row_interval(row: pd.Series, key: str) -> tuple[float, float]:
    """The measured interval of a row's figure `key` (NaN, NaN where the row has none): the steady
    rate's own fields, or the slowest and fastest round of a time's `round_<key>` list."""
    if key == "samples_per_sec":
        low, high = number(row.get(Col.SAMPLES_PER_SEC_LOW)), number(row.get(Col.SAMPLES_PER_SEC_HIGH))
        return (math.nan, math.nan) if low is None or high is None else (low, high)
    rounds = row.get(f"round_{key}")
    values = [value for value in rounds if number(value) is not None] if isinstance(rounds, list) else []
    return (min(values), max(values)) if values else (math.nan, math.nan)
