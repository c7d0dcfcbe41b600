"""Shared figure set-up for every chart: one size, one resolution, titles that say what ran.

Figures are built with `matplotlib.figure.Figure` and saved through the Agg canvas, never
through pyplot, so reports work headless and leave no global plotting state behind. A fixed
size and dpi (no tight bounding box) makes every PNG the same, predictable pixel size.
"""

from __future__ import annotations

import io
import math
import numbers
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

import numpy as np
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


def legend_outside(
    figure: Figure,
    *axes: Axes,
    columns: int = 4,
    where: Literal["outside lower center", "outside right upper"] = "outside lower center",
) -> None:
    """One legend of the named `axes`' lines and patches (each label once), outside every panel
    (`where`: below them, or right of them at the top), so that no entry covers the data."""
    entries: dict[str, Artist] = {}
    for panel in axes:
        for handle, label in zip(*panel.get_legend_handles_labels()):
            entries.setdefault(label, handle)
    if entries:
        figure.legend(entries.values(), entries.keys(), loc=where, ncol=columns, fontsize="small")


def bar_text(value: float) -> str:
    """A figure as a chart writes it beside its bar: whole with thousands separators from 1 to
    ten million, else in three significant digits (`0.25`, `1.5e+300`, `1e-320`), so a rate at
    either end of a float's range is still a short label inside the chart."""
    return f"{value:,.0f}" if 1 <= abs(value) < 1e7 else f"{value:.3g}"


def finite(values: Iterable[object]) -> np.ndarray:
    """`values` as floats, each that is no finite number (None, NaN, an overflow's infinity) NaN:
    what a chart leaves out, as matplotlib does NaN, where infinity would stop it."""
    floats = np.array([value if isinstance(value, numbers.Real) else np.nan for value in values], dtype=float)
    return np.where(np.isfinite(floats), floats, np.nan)


def scale_of(values: Iterable[object]) -> tuple[float, str]:
    """The power of ten a chart divides `values` by, and what its axis label adds (` (x 1e+300)`),
    where their largest lies outside 0.001 to a billion: matplotlib's limits and ticks overflow
    near a float's maximum and fail to label its smallest; 1 and '' for every figure a run gives."""
    top = float(np.nanmax(np.abs(finite(values)), initial=0.0))
    if top == 0 or 1e-3 <= top < 1e9:
        return 1.0, ""
    power = math.floor(math.log10(top))
    return 10.0**power, f" (x 1e{power:+d})"


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
    """What a compare's console summary is headed with: its job (its layout, or where its input has
    none its size: `64 tokens`), scaling and device kind."""
    format_ = "any layout (a transformer)" if job.spec.transformer else job.data_format
    layout = format_ if job.input.has_layout else job.input.describe()
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
