"""Shared figure set-up for every chart: one size, one resolution, titles that say what ran.

Figures are built with `matplotlib.figure.Figure` and saved through the Agg canvas, never
through pyplot, so reports work headless and leave no global plotting state behind. A fixed
size and dpi (no tight bounding box) makes every PNG the same, predictable pixel size.
"""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from mgbench.core.job import Job
from mgbench.core.kinds import DeviceKind
from mgbench.core.safe_files import write_file
from mgbench.reports.columns import Col

FIGSIZE_INCHES = (10.0, 5.6)
DPI = 100
PIXEL_SIZE = (int(FIGSIZE_INCHES[0] * DPI), int(FIGSIZE_INCHES[1] * DPI))
"""(width, height) of every chart PNG."""


def new_figure(height_inches: float = FIGSIZE_INCHES[1], width_inches: float = FIGSIZE_INCHES[0]) -> Figure:
    """A figure of the charts' size (`height_inches` for one whose panels grow with the runs it
    shows, `width_inches` for one set beside another)."""
    figure = Figure(figsize=(width_inches, height_inches), dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def legend_outside(figure: Figure, *axes: Axes, columns: int = 4, where: str = "lower center") -> None:
    """One legend of the named `axes`' lines and patches (each label once), outside every panel
    (`outside lower center`, or another `outside` place), so that no entry covers the data."""
    entries: dict[str, Artist] = {}
    for panel in axes:
        for handle, label in zip(*panel.get_legend_handles_labels()):
            entries.setdefault(label, handle)
    if entries:
        figure.legend(entries.values(), entries.keys(), loc=f"outside {where}", ncol=columns, fontsize="small")


def save(figure: Figure, path: Path) -> Path:
    """The PNG drawn in memory, then written whole beside `path` and renamed over it
    (`safe_files.write_file`): a link or a hard link left at the name in a folder from elsewhere
    is replaced, never written through, and a full disk leaves the old chart whole. The folder
    exists already (`RunFolder.made`)."""
    image = io.BytesIO()
    figure.savefig(image, format="png", dpi=DPI)
    write_file(path.parent, path.name, image.getvalue())
    return path


def compare_title(job: Job, scaling: str) -> str:
    """What a compare's console summary is headed with: its job, scaling and device kind."""
    layout = "any layout (a transformer)" if job.spec.transformer else job.data_format
    return f"{job.model} {job.precision} {layout}, {scaling} scaling, {job.device_kind}"


def job_title(frame: pd.DataFrame) -> str:
    """`model precision data-format`, shared by every run of a compare (several values joined)."""
    parts = []
    for column in ("model", "precision", "data_format"):
        values = [str(v) for v in dict.fromkeys(frame[column].dropna())]
        parts.append("/".join(values))
    return " ".join(parts)


def run_title(row: pd.Series) -> str:
    kind = "GPU" if DeviceKind(row[Col.DEVICE_KIND]).on_gpu else "CPU device"
    devices = int(row[Col.DEVICES])
    return (
        f"{row[Col.FRAMEWORK]} {row[Col.STRATEGY]}: {row[Col.MODEL]} {row[Col.PRECISION]}, "
        f"{devices} {kind}{'s' if devices > 1 else ''}, global batch {int(row[Col.GLOBAL_BATCH])}"
    )
