"""The rows of `gpu_decode.sh`'s run folders side by side: `python3 benchmarks/decode_table.py
RUN_DIR...` (a folder without rows, a compare that did not start, is left out). One line per row
(framework, strategy, compile mode, dataset, --decode and its host share, status, img/s, input
wait, what decoded and where the crop ran, or why the row did not run), then each real-data
row's img/s as a share of the synthetic row of the same framework, strategy and compile mode:
how much of the compute-only rate each decoder keeps; beside it the same share of the median
step after the first `SETTLED` steps, which every path has left behind by then (a `--decode gpu`
run's first 20-60 steps run slower, and the warm-up detector does not always leave them out of
the row's rate: benchmarks/RUNS.md, runs ag to ai).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from mgbench.records.results import current_name

KEY = ["framework", "strategy", "compile"]
DECODE = ["decode", "decode_host_share"]
"""Where a row decoded: `--decode` and, for `gpu`, the share of each batch the workers decoded."""
SETTLED = 20


def rows(folders: list[str]) -> pd.DataFrame:
    written = [Path(folder) / "results.jsonl" for folder in folders if (Path(folder) / "results.jsonl").exists()]
    frame = pd.concat([pd.read_json(path, lines=True).rename(columns=current_name) for path in written])
    frame = frame.reset_index(drop=True)
    for column, missing in (
        ("compile", "-"),
        ("decode", "cpu"),
        ("decode_host_share", 0.0),
        ("decoder", "-"),
        ("error", ""),
    ):
        frame[column] = frame[column].astype(object).fillna(missing) if column in frame else missing
    for column in ("samples_per_sec", "input_wait_fraction"):
        if column not in frame:
            frame[column] = None
    frame["dataset"] = frame["dataset"].str.split(":").str[0]
    frame["decode"] = frame["decode"].where(frame["dataset"] != "synthetic", "-")
    return frame


def main(folders: list[str]) -> None:
    frame = rows(folders)
    shown = frame[[*KEY, "dataset", *DECODE, "status", "samples_per_sec", "input_wait_fraction", "decoder"]].copy()
    shown["decoder"] = shown["decoder"].where(frame["status"] == "ok", frame["error"].str.slice(0, 100))
    print(shown.sort_values([*KEY, "dataset", *DECODE]).to_string(index=False, float_format="{:.3f}".format))
    shared = shares(frame)
    if not shared.empty:
        print(f"\nreal data's img/s as a share of synthetic's, and the same of the median step after step {SETTLED}:")
        columns = [*DECODE, "rounds", "share_of_synthetic", "settled_share"]
        print(shared[columns].to_string(float_format="{:.3f}".format))


def shares(frame: pd.DataFrame) -> pd.DataFrame:
    """The ok real-data rows that have an ok synthetic twin (same framework, strategy and compile
    mode), with both shares of it: of the row's img/s, and of the median step after `SETTLED`.
    Rows run more than once (`gpu_decode.sh`'s REPEAT) count as the median of their `rounds`."""
    ok = frame[frame["status"] == "ok"].copy()
    ok["settled_samples_per_sec"] = ok["global_batch"] / ok["step_seconds"].map(
        lambda steps: np.median(steps[SETTLED:])
    )
    rates = ok.groupby([*KEY, "dataset", *DECODE], dropna=False)[["samples_per_sec", "settled_samples_per_sec"]]
    ok = rates.median().join(rates.size().rename("rounds")).reset_index()
    synthetic = ok[ok["dataset"] == "synthetic"].set_index(KEY)
    real = ok[ok["dataset"] != "synthetic"].set_index(KEY)
    real = real[real.index.isin(synthetic.index)]
    twins = synthetic.reindex(real.index)
    return real.assign(
        share_of_synthetic=real["samples_per_sec"] / twins["samples_per_sec"].to_numpy(),
        settled_share=real["settled_samples_per_sec"] / twins["settled_samples_per_sec"].to_numpy(),
    )


if __name__ == "__main__":
    main(sys.argv[1:])
