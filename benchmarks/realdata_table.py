"""The rows of run folders side by side, real data against synthetic: `python3
benchmarks/realdata_table.py RUN_DIR...`. One line per row (framework, strategy, model,
dataset, compile mode, img/s, input wait, loader and its workers), then for each real-data row
its throughput as a share of the synthetic row of the same framework, strategy, model,
compile mode and device count, when one of the folders holds it.
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


def main(folders: list[str]) -> None:
    frame = rows(folders)
    shown = frame[[*KEY, "dataset", "status", "images_per_sec", "input_wait_fraction", "loader", "loader_workers"]]
    print(shown.to_string(index=False, float_format=lambda value: f"{value:.3f}"))
    ok = frame[frame["status"] == "ok"]
    synthetic = ok[ok["dataset"] == "synthetic"].set_index(KEY)["images_per_sec"]
    for _, row in ok[ok["dataset"] != "synthetic"].iterrows():
        key = tuple(row[column] for column in KEY)
        if key in synthetic.index:
            share = row["images_per_sec"] / synthetic.loc[key]
            print(
                f"{' '.join(map(str, key))} {row['dataset']}: {row['images_per_sec']:.0f} img/s = {share:.1%} of synthetic"
            )


if __name__ == "__main__":
    main(sys.argv[1:])
