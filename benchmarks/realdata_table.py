"""The rows of run folders side by side, real data against synthetic: `python3
benchmarks/realdata_table.py RUN_DIR...`. One line per row (framework, strategy, model,
dataset, compile mode, img/s, input wait, loader and its workers); then, per framework,
strategy, model, compile mode, device count, dataset and worker count, the median img/s over the folders'
runs (rounds of one call) with their lowest and highest; then each real dataset's median as a
share of the synthetic median of the same key, and each round's real run as a share of that
round's synthetic run (folders named `...-r<round>` by `gpu_realdata.sh`), which host speed
drifting from round to round moves less.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from mgbench.records.results import current_name

KEY = ["framework", "strategy", "model", "compile", "devices"]


def rows(folders: list[str]) -> pd.DataFrame:
    frames = [
        pd.read_json(Path(folder) / "results.jsonl", lines=True).rename(columns=current_name) for folder in folders
    ]
    frame = pd.concat(frames, keys=[Path(folder).name for folder in folders], names=["folder", None])
    frame = frame.reset_index(level="folder").reset_index(drop=True)
    frame["round"] = frame["folder"].str.extract(r"-r(\d+)$", expand=False)
    frame["dataset"] = frame["dataset"].str.split(":").str[0]
    frame["compile"] = frame["compile"].astype(object).fillna("-") if "compile" in frame else "-"
    for column in ("input_wait_fraction", "loader", "loader_workers", "samples_per_sec"):
        if column not in frame:
            frame[column] = None
    return frame


def medians(frame: pd.DataFrame) -> pd.DataFrame:
    """Median, lowest and highest img/s and the median input wait of each key's ok runs per
    dataset and loader worker count."""
    ok = frame[frame["status"] == "ok"]
    grouped = ok.groupby([*KEY, "dataset", "loader_workers"], dropna=False)
    return grouped.agg(
        runs=("samples_per_sec", "size"),
        median=("samples_per_sec", "median"),
        lowest=("samples_per_sec", "min"),
        highest=("samples_per_sec", "max"),
        input_wait=("input_wait_fraction", "median"),
    ).reset_index()


def round_shares(frame: pd.DataFrame, key: tuple, dataset: str, workers: float) -> list[float]:
    """Each round's real img/s over the same round's synthetic img/s for one key, in round order."""
    ok = frame[(frame["status"] == "ok") & frame["round"].notna()]
    mine = ok[[tuple(row) == key for row in ok[KEY].itertuples(index=False)]]
    synthetic = mine[mine["dataset"] == "synthetic"].set_index("round")["samples_per_sec"]
    real = mine[(mine["dataset"] == dataset) & (mine["loader_workers"] == workers)].set_index("round")[
        "samples_per_sec"
    ]
    rounds = sorted(set(synthetic.index) & set(real.index), key=int)
    return [real[r] / synthetic[r] for r in rounds]


def main(folders: list[str]) -> None:
    frame = rows(folders)
    shown = frame[[*KEY, "dataset", "status", "samples_per_sec", "input_wait_fraction", "loader", "loader_workers"]]
    print(shown.to_string(index=False, float_format=lambda value: f"{value:.3f}"))
    summary = medians(frame)
    print(summary.to_string(index=False, float_format=lambda value: f"{value:.3f}"))
    synthetic = summary[summary["dataset"] == "synthetic"].set_index(KEY)["median"]
    for _, row in summary[summary["dataset"] != "synthetic"].iterrows():
        key = tuple(row[column] for column in KEY)
        if key in synthetic.index:
            share = row["median"] / synthetic.loc[key]
            rounds = round_shares(frame, key, row["dataset"], row["loader_workers"])
            by_round = ", ".join(f"{value:.1%}" for value in rounds)
            print(
                f"{' '.join(map(str, key))} {row['dataset']} ({row['loader_workers']:.0f} workers): median {row['median']:.0f} img/s over {row['runs']} "
                f"run(s) = {share:.1%} of synthetic's {synthetic.loc[key]:.0f}; by round {by_round or '-'}"
                + (f" (median {pd.Series(rounds).median():.1%})" if rounds else "")
            )


if __name__ == "__main__":
    main(sys.argv[1:])
