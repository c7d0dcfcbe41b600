"""How far one command's rows move from compare to compare: `python3
benchmarks/repeatability_table.py RUN_DIR...`, folders named `<anything>-<part>-<k>` (k the
compare's number, as `gpu_repeatability.sh` names them). One line per part and row (framework,
strategy, devices): each compare's steady rate with its interval and round figures, then the
spread, (highest - lowest) / median of the compares' figures, in percent.
"""

from __future__ import annotations

import re
import statistics
import sys
from pathlib import Path

import pandas as pd

from mgbench.records.results import current_name

ROW = ["part", "framework", "strategy", "devices"]


def rows(folders: list[str]) -> pd.DataFrame:
    frames = []
    for folder in folders:
        found = re.search(r"-([^-]+)-(\d+)$", Path(folder).name)
        if not found:
            raise SystemExit(f"{folder}: not named <anything>-<part>-<k>")
        frame = pd.read_json(Path(folder) / "results.jsonl", lines=True).rename(columns=current_name)
        frames.append(frame.assign(part=found[1], compare=int(found[2])))
    frame = pd.concat(frames, ignore_index=True)
    return frame[frame["status"] == "ok"]


def spread(figures: list[float]) -> float:
    """(highest - lowest) / median, in percent."""
    return 100 * (max(figures) - min(figures)) / statistics.median(figures)


def describe(row: pd.Series) -> str:
    """One compare's figure: steady rate (its interval; each round's figure; the median round's
    bottleneck and warm-up steps)."""
    rounds = ", ".join(f"{value:.0f}" for value in row.get("round_samples_per_sec") or [])
    low, high = row.get("samples_per_sec_low", float("nan")), row.get("samples_per_sec_high", float("nan"))
    return (
        f"{row['samples_per_sec']:.0f} ({low:.0f}-{high:.0f}; rounds {rounds}; "
        f"{row.get('bottleneck')}, warm-up {row.get('warmup_steps')})"
    )


def table(frame: pd.DataFrame) -> pd.DataFrame:
    lines = []
    for key, group in frame.sort_values("compare").groupby(ROW, sort=False):
        figures = [float(value) for value in group["samples_per_sec"]]
        compares = "; ".join(describe(row) for _, row in group.iterrows())
        lines.append({**dict(zip(ROW, key)), "compares": compares, "spread %": round(spread(figures), 1)})
    return pd.DataFrame(lines)


def main() -> None:
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    with pd.option_context("display.width", 250, "display.max_colwidth", 200):
        print(table(rows(sys.argv[1:])).to_string(index=False))


if __name__ == "__main__":
    main()
