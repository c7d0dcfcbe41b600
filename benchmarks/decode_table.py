"""The rows of `gpu_decode.sh`'s run folders side by side: `python3 benchmarks/decode_table.py
RUN_DIR...` (a folder without rows, a compare that did not start, is left out). One line per row (framework, strategy, compile mode, dataset, --decode, status,
img/s, input wait, what decoded and where the crop ran, or why the row did not run), then each
real-data row's img/s as a share of the synthetic row of the same framework, strategy and
compile mode: how much of the compute-only rate each decoder keeps.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

KEY = ["framework", "strategy", "compile"]


def rows(folders: list[str]) -> pd.DataFrame:
    written = [Path(folder) / "results.jsonl" for folder in folders if (Path(folder) / "results.jsonl").exists()]
    frame = pd.concat([pd.read_json(path, lines=True) for path in written])
    frame = frame.reset_index(drop=True)
    for column, missing in (("compile", "-"), ("decode", "cpu"), ("decoder", "-"), ("error", "")):
        frame[column] = frame[column].astype(object).fillna(missing) if column in frame else missing
    for column in ("images_per_sec", "input_wait_fraction"):
        if column not in frame:
            frame[column] = None
    frame["dataset"] = frame["dataset"].str.split(":").str[0]
    frame["decode"] = frame["decode"].where(frame["dataset"] != "synthetic", "-")
    return frame


def main(folders: list[str]) -> None:
    frame = rows(folders)
    shown = frame[[*KEY, "dataset", "decode", "status", "images_per_sec", "input_wait_fraction", "decoder"]].copy()
    shown["decoder"] = shown["decoder"].where(frame["status"] == "ok", frame["error"].str.slice(0, 100))
    print(shown.sort_values([*KEY, "dataset", "decode"]).to_string(index=False, float_format="{:.3f}".format))
    ok = frame[frame["status"] == "ok"]
    synthetic = ok[ok["dataset"] == "synthetic"].set_index(KEY)["images_per_sec"]
    real = ok[ok["dataset"] != "synthetic"].set_index(KEY)
    real = real[real.index.isin(synthetic.index)]
    if not real.empty:
        real = real.assign(share_of_synthetic=real["images_per_sec"] / synthetic.reindex(real.index).to_numpy())
        print("\nreal data's img/s as a share of synthetic's:")
        print(real[["decode", "share_of_synthetic"]].to_string(float_format="{:.3f}".format))


if __name__ == "__main__":
    main(sys.argv[1:])
