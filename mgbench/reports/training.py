"""The comparison the seeds make with `--epochs`: time to train N epochs (validation included)
and the test split's AUC (top-1 too for class folders), per framework, strategy and device count,
with the compile seconds it includes and the epoch rate (the samples of every epoch over the time
to train, in the model's unit: compile, warm-up, stalls and validation all in, unlike the steady rate).

A table (`training_table`) and a chart (`time_to_train_chart`) from the rows that trained in
epochs; rows timed by `--steps` have no time to train and are left out.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from mgbench.core.inputs import IMAGES
from mgbench.reports.cells import figure_text, number, run_label
from mgbench.reports.columns import Col
from mgbench.reports.figures import job_title, new_figure, save
from mgbench.reports.ranking import split_metric
from mgbench.reports.units import frame_unit

COLUMNS = {
    "framework": "framework",
    "strategy": "strategy",
    "devices": "devices",
    "loader": "loader",
    "loader_workers": "workers",
    "epochs": "epochs",
    "time_to_train_seconds": "time to train (s)",
    "compile_seconds": "of it compile (s)",
    "time_to_target_seconds": "time to target (s)",
    "epoch_samples_per_sec": f"epoch {IMAGES.label} (all in)",
    "val_auc": "val AUC",
    "test_auc": "test AUC",
    "test_top1": "test top-1",
}
"""The table's columns and their headers in the report (`headers`: the epoch rate's in its model's unit)."""


def headers(frame: pd.DataFrame) -> dict[str, str]:
    """The table's headers for `frame`'s rows: `COLUMNS`, the epoch rate in its model's unit (`units.frame_unit`)."""
    return {**COLUMNS, "epoch_samples_per_sec": f"epoch {frame_unit(frame).label} (all in)"}


def training_table(frame: pd.DataFrame) -> pd.DataFrame:
    """One line per ok row that trained in epochs, fastest to train first (empty when none did);
    the epoch rate in its model's unit."""
    if Col.TIME_TO_TRAIN_SECONDS not in frame:
        return pd.DataFrame(columns=list(COLUMNS))
    rows = frame[(frame[Col.STATUS] == "ok") & frame[Col.TIME_TO_TRAIN_SECONDS].notna()]
    unit = frame_unit(frame)
    lines = []
    for _, row in rows.iterrows():
        epochs = row[Col.EPOCH_METRICS] if isinstance(row[Col.EPOCH_METRICS], list) else []
        lines.append(
            {
                "framework": row[Col.FRAMEWORK],
                "strategy": row[Col.STRATEGY],
                "devices": int(row[Col.DEVICES]),
                "loader": row.get(Col.LOADER),
                "loader_workers": row.get(Col.LOADER_WORKERS),
                "epochs": len(epochs),
                "time_to_train_seconds": float(row[Col.TIME_TO_TRAIN_SECONDS]),
                "compile_seconds": number(row.get(Col.COMPILE_SECONDS)) or np.nan,
                "time_to_target_seconds": row.get(Col.TIME_TO_TARGET_SECONDS, np.nan),
                "epoch_samples_per_sec": unit.of(number(row.get(Col.EPOCH_SAMPLES_PER_SEC)) or np.nan),
                "val_auc": epochs[-1].get("val_auc", np.nan) if epochs else np.nan,
                "test_auc": split_metric(row.get(Col.TEST_METRICS), "auc"),
                "test_top1": split_metric(row.get(Col.TEST_METRICS), "top1"),
            }
        )
    table = pd.DataFrame(lines, columns=list(COLUMNS))
    return table.sort_values("time_to_train_seconds", kind="stable").reset_index(drop=True)


def _bar_note(line: pd.Series) -> str:
    """`72.0 s (61.0 s compile), test AUC 0.754`: a bar's time, the compile in it, its test AUC."""
    compiled = number(line["compile_seconds"])
    within = f" ({compiled:.1f} s compile)" if compiled else ""
    return f"{line['time_to_train_seconds']:.1f} s{within}, test AUC {figure_text(line['test_auc'], '{:.3f}')}"


def time_to_train_chart(table: pd.DataFrame, path: Path, title_rows: pd.DataFrame) -> Path:
    """Horizontal bars of time to train N epochs per run, each labelled with the compile time in it
    and its test AUC."""
    figure = new_figure()
    axes = figure.subplots()
    labels = [run_label(row) for _, row in table.iterrows()]
    bars = axes.barh(labels, table["time_to_train_seconds"])
    notes = [_bar_note(line) for _, line in table.iterrows()]
    axes.bar_label(bars, notes, padding=3, fontsize="small")
    axes.invert_yaxis()
    axes.set_xlabel(f"seconds to train {int(table['epochs'].max())} epoch(s), validation included")
    axes.set_xlim(0, table["time_to_train_seconds"].max() * 1.45)
    axes.grid(axis="x", alpha=0.3)
    axes.set_title(f"Time to train and test AUC: {job_title(title_rows)}")
    return save(figure, path)
