"""Every chart of a run folder, written as PNGs into `charts/`, and what each shows.

Which charts exist depends on what the folder holds: scaling needs two device counts, its
loss also a breakdown on both rows of a framework/strategy, training curves need per-epoch
metrics, a utilisation chart needs the run's trace, where step time goes a row whose step was
split (a profile, or on CPU devices the host's timing). What a chart could not be drawn from is
listed as a note for the report instead of failing it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mgbench.projection.calibration import read_projection
from mgbench.records.runfolder import RunFolder
from mgbench.reports.columns import Col
from mgbench.reports.compare_charts import (
    breakdown_chart,
    epoch_chart,
    scaling_chart,
    scaling_loss_chart,
    splits_any_step,
    throughput_chart,
)
from mgbench.reports.folder_data import RunFolderData
from mgbench.reports.projection_chart import projection_chart
from mgbench.reports.row_order import in_line_order
from mgbench.reports.run_charts import step_throughput_chart, utilisation_chart
from mgbench.reports.scaling_loss import scaling_losses
from mgbench.reports.training import time_to_train_chart, training_table
from mgbench.reports.units import frame_unit
from mgbench.reports.utilisation_charts import every_run_utilisation_chart, throughput_and_utilisation_chart


@dataclass(frozen=True)
class Chart:
    title: str
    path: Path


@dataclass
class ChartSet:
    side_by_side: list[Chart] = field(default_factory=list)
    """Every run's utilisation on one time axis, and throughput beside utilisation per run."""
    compare: list[Chart] = field(default_factory=list)
    runs: dict[str, list[Chart]] = field(default_factory=dict)
    notes: dict[str, list[str]] = field(default_factory=dict)
    """Per run id: why a chart of that run is missing."""
    projection: Chart | None = None
    """The folder's projection past its machine (`mgbench project`), where it holds one."""


def _has_epochs(value: object) -> bool:
    return isinstance(value, list) and len(value) > 0


def write_charts(data: RunFolderData, folder: RunFolder | None = None) -> ChartSet:
    """Draw what the folder supports into the `charts/` of `folder` (default: the run folder's
    own); a folder with no successful run gets per-run notes only.

    PNGs left in `charts/` by an earlier report are removed first, so `charts/` always matches
    the report next to it; `charts/` itself is made with no link on the way (`RunFolder.made`).
    """
    folder = folder or RunFolder(data.root)
    for stale in folder.made(folder.charts).glob("*.png"):
        folder.chart(stale.name).unlink()
    charts = ChartSet()
    ok = data.frame[data.frame["status"] == "ok"]
    traces = {run_id: trace for run_id in data.frame["run_id"] if (trace := data.trace(run_id)) is not None}
    if not ok.empty:
        ordered = in_line_order(ok)
        if any(run_id in traces for run_id in ordered["run_id"]):
            path = every_run_utilisation_chart(ordered, traces, folder.chart("utilisation-all.png"))
            charts.side_by_side.append(Chart("Utilisation of every run, phases shaded", path))
        path = throughput_and_utilisation_chart(ordered, folder.chart("throughput-utilisation.png"))
        charts.side_by_side.append(Chart("Throughput and utilisation per run", path))
        charts.compare.append(Chart("Throughput", throughput_chart(ok, folder.chart("throughput.png"))))
        if ok[Col.DEVICES].nunique() > 1:
            charts.compare.append(Chart("Scaling", scaling_chart(ok, folder.chart("scaling.png"))))
            losses = scaling_losses(ok)
            if losses:
                path = scaling_loss_chart(ok, losses, folder.chart("scaling-loss.png"))
                charts.compare.append(Chart("Scaling loss: what each category cost", path))
        if splits_any_step(ok):
            charts.compare.append(Chart("Time breakdown", breakdown_chart(ordered, folder.chart("breakdown.png"))))
        with_epochs = ok[ok[Col.EPOCH_METRICS].map(_has_epochs)]
        if not with_epochs.empty:
            charts.compare.append(Chart("Training curves", epoch_chart(with_epochs, folder.chart("epochs.png"))))
        trained = training_table(ok)
        if not trained.empty:
            path = time_to_train_chart(trained, folder.chart("time-to-train.png"), ok)
            charts.compare.append(Chart("Time to train N epochs and test AUC", path))
    projection = read_projection(data.root)
    if projection is not None:
        path = projection_chart(projection, folder.chart("projection.png"), frame_unit(data.frame))
        charts.projection = Chart("Projected scaling", path)
    for _, row in data.frame.iterrows():
        run_id = row[Col.RUN_ID]
        drawn, notes = [], []
        trace = traces.get(run_id)
        if trace is None:
            notes.append("no utilisation trace in this folder")
        else:
            drawn.append(Chart("Utilisation", utilisation_chart(row, trace, folder.chart(f"utilisation-{run_id}.png"))))
        if row[Col.STATUS] == "ok" and len(row[Col.STEP_SECONDS]) > 0:
            drawn.append(
                Chart("Throughput over steps", step_throughput_chart(row, folder.chart(f"steps-{run_id}.png")))
            )
        charts.runs[run_id] = drawn
        charts.notes[run_id] = notes
    return charts
