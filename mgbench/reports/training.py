"""The comparison the seeds make with `--epochs`: time to train N epochs (validation included)
and the test split's AUC (top-1 too for class folders; a language model's objective's first
metric, its loss: `judged.frame_metric`), per framework, strategy and device count,
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
from mgbench.core.objective import AUC, TOP1
from mgbench.reports.cells import figure_text, number, run_label
from mgbench.reports.columns import Col
from mgbench.reports.figures import job_title, new_figure, save
from mgbench.reports.judged import frame_metric
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
}
"""The table's columns before its metrics, and their headers in the report (`headers`: the epoch
rate's in its model's unit)."""
IMAGE_METRICS = {"val_auc": "val AUC", "test_auc": "test AUC", "test_top1": "test top-1"}
"""An image model's metric columns: the last validation's AUC, the test split's AUC and top-1."""
VAL, TEST = "val_", "test_"


def metric_columns(frame: pd.DataFrame) -> dict[str, str]:
    """The metric columns of `frame`'s table and their headers, each `val_` (the last epoch's
    validation) or `test_` (the test split) and the metric's name: `IMAGE_METRICS` for an image
    model's rows, the validation and test of its objective's first metric for another's
    (`val loss`, `test loss` for a language model)."""
    metric = frame_metric(frame)
    if metric in (AUC, TOP1):
        return IMAGE_METRICS
    return {f"{VAL}{metric.name}": f"val {metric.label}", f"{TEST}{metric.name}": f"test {metric.label}"}


def headers(frame: pd.DataFrame) -> dict[str, str]:
    """The table's headers for `frame`'s rows: `COLUMNS`, the epoch rate in its model's unit
    (`units.frame_unit`), then its metrics' (`metric_columns`)."""
    return {**COLUMNS, "epoch_samples_per_sec": f"epoch {frame_unit(frame).label} (all in)", **metric_columns(frame)}


def training_table(frame: pd.DataFrame) -> pd.DataFrame:
    """One line per ok row that trained in epochs, fastest to train first (empty when none did);
    the epoch rate in its model's unit."""
    columns = list(headers(frame))
    if Col.TIME_TO_TRAIN_SECONDS not in frame:
        return pd.DataFrame(columns=columns)
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
                **{
                    key: (epochs[-1].get(key, np.nan) if epochs else np.nan)
                    if key.startswith(VAL)
                    else split_metric(row.get(Col.TEST_METRICS), key.removeprefix(TEST))
                    for key in metric_columns(frame)
                },
            }
        )
    table = pd.DataFrame(lines, columns=columns)
    return table.sort_values("time_to_train_seconds", kind="stable").reset_index(drop=True)


def _bar_note(line: pd.Series, test: str, label: str) -> str:
    """`72.0 s (61.0 s compile), test AUC 0.754`: a bar's time, the compile in it, its test metric
    (column `test`, named `label`)."""
    compiled = number(line["compile_seconds"])
    within = f" ({compiled:.1f} s compile)" if compiled else ""
    return f"{line['time_to_train_seconds']:.1f} s{within}, {label} {figure_text(line[test], '{:.3f}')}"


def time_to_train_chart(table: pd.DataFrame, path: Path, title_rows: pd.DataFrame) -> Path:
    """Horizontal bars of time to train N epochs per run, each labelled with the compile time in it
    and its test metric (AUC for an image model's rows, the objective's first for another's)."""
    test, label = next((key, name) for key, name in metric_columns(title_rows).items() if key.startswith(TEST))
    figure = new_figure()
    axes = figure.subplots()
    labels = [run_label(row) for _, row in table.iterrows()]
    bars = axes.barh(labels, table["time_to_train_seconds"])
    notes = [_bar_note(line, test, label) for _, line in table.iterrows()]
    axes.bar_label(bars, notes, padding=3, fontsize="small")
    axes.invert_yaxis()
    axes.set_xlabel(f"seconds to train {int(table['epochs'].max())} epoch(s), validation included")
    axes.set_xlim(0, table["time_to_train_seconds"].max() * 1.45)
    axes.grid(axis="x", alpha=0.3)
    axes.set_title(f"Time to train and {label}: {job_title(title_rows)}")
    return save(figure, path)
