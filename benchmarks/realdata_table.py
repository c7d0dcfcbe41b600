"""The rows of run folders side by side, real data against synthetic: `python3
benchmarks/realdata_table.py RUN_DIR...`. One line per row (framework, strategy, model,
dataset, compile mode, img/s, input wait, loader and its workers); then, per framework,
strategy, model, compile mode, device count, dataset and worker count, the median img/s over the folders'
runs (rounds of one call) with their lowest and highest; then each real dataset's median as a
share of the synthetic median of the same key.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

KEY = ["framework", "strategy", "model", "compile", "devices"]


def rows(folders: list[str]) -> pd.DataFrame:
    frames = [pd.read_json(Path(folder) / "results.jsonl", lines=True) for folder in folders]
    frame = pd.concat(frames, ignore_index=True)
    frame["dataset"] = frame["dataset"].str.split(":").str[0]
    frame["compile"] = frame["compile"].astype(object).fillna("-") if "compile" in frame else "-"
    for column in ("input_wait_fraction", "loader", "loader_workers", "images_per_sec"):
        if column not in frame:
            frame[column] = None
    return frame


def medians(frame: pd.DataFrame) -> pd.DataFrame:
    """Median, lowest and highest img/s and the median input wait of each key's ok runs per
    dataset and loader worker count."""
    ok = frame[frame["status"] == "ok"]
    grouped = ok.groupby([*KEY, "dataset", "loader_workers"], dropna=False)
    return grouped.agg(
        runs=("images_per_sec", "size"),
        median=("images_per_sec", "median"),
        lowest=("images_per_sec", "min"),
        highest=("images_per_sec", "max"),
        input_wait=("input_wait_fraction", "median"),
    ).reset_index()


def main(folders: list[str]) -> None:
    frame = rows(folders)
    shown = frame[[*KEY, "dataset", "status", "images_per_sec", "input_wait_fraction", "loader", "loader_workers"]]
    print(shown.to_string(index=False, float_format=lambda value: f"{value:.3f}"))
    summary = medians(frame)
    print(summary.to_string(index=False, float_format=lambda value: f"{value:.3f}"))
    synthetic = summary[summary["dataset"] == "synthetic"].set_index(KEY)["median"]
    for _, row in summary[summary["dataset"] != "synthetic"].iterrows():
        key = tuple(row[column] for column in KEY)
        if key in synthetic.index:
            share = row["median"] / synthetic.loc[key]
            print(
                f"{' '.join(map(str, key))} {row['dataset']} ({row['loader_workers']:.0f} workers): median {row['median']:.0f} img/s over {row['runs']} "
                f"run(s) = {share:.1%} of synthetic's {synthetic.loc[key]:.0f}"
            )


if __name__ == "__main__":
    main(sys.argv[1:])
