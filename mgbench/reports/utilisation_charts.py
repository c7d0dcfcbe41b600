"""Utilisation side by side: every run's devices on one time axis, and each run's throughput beside its utilisation.

The per-run charts (`run_charts`) show one run each, far apart on the page. These put the runs
together: one panel per run, stacked on one shared time axis (seconds since each run's launch)
with its phases shaded (`phases.run_phases`: start-up, compile, warm-up, steady, stalls, the
profile, evaluation), so that a GPU working alone while the others compile reads apart from
training in spikes; and one bar per run of its rate (img/s, tokens/s) beside its utilisation over the steady
window, for the reader who wants the answer at a glance.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib import rc_context
from matplotlib.axes import Axes
from matplotlib.patches import Patch

from mgbench.measure.phases import PHASES, run_phases
from mgbench.reports.cells import number, run_label
from mgbench.reports.columns import Col
from mgbench.reports.figures import bar_text, job_title, new_figure, save, scale_of
from mgbench.reports.run_charts import OTHER_ALPHA, PHASE_ALPHA, PHASE_COLORS, shade_phases
from mgbench.reports.summary import measured_host
from mgbench.reports.units import frame_unit

DEVICE_COLORS = ("#1f3b73", "#8c1d40", "#2f6b2f", "#6b4c9a", "#b8860b", "#006d77", "#444444", "#c71585")
"""One line colour per device index, dark enough to read over every phase's shade."""
PANEL_INCHES = 0.85
"""Height of one run's panel; the chart grows with the runs it shows."""
FRAME_INCHES = 2.4
"""The title, the time axis and the legend below the panels."""
SUMMARY_WIDTH_INCHES = 6.0
"""The side-by-side charts are narrower than the others: they sit beside each other, or each
alone across a phone."""
PHONE_FONT_POINTS = 13.0
"""The every-run chart's base type size: its smallest text (matplotlib's `small`, 10.8 pt, 15 px
at 100 dpi) is 9.8 px on a 390 px phone showing the 600 px chart across it."""


def source_word(ok: pd.DataFrame) -> str:
    """What the rows' utilisation measured: `GPU`, or `host CPU` where CPU devices stood in."""
    return "host CPU" if measured_host(ok) else "GPU"


def every_run_utilisation_chart(ok: pd.DataFrame, traces: dict[str, pd.DataFrame], path: Path) -> Path:
    """One panel per run that has a trace, in the frame's order, sharing the time and the 0-100%
    axes: each device's utilisation over the run's shaded phases, the run's steady median beside
    its name; the phases' and devices' legend below the panels, outside the data. As narrow as
    the chart beside it, in `PHONE_FONT_POINTS` type, so that a phone showing it 390 px wide
    still reads its text."""
    with rc_context({"font.size": PHONE_FONT_POINTS}):
        return _every_run_utilisation_chart(ok, traces, path)


def _every_run_utilisation_chart(ok: pd.DataFrame, traces: dict[str, pd.DataFrame], path: Path) -> Path:
    rows = [row for _, row in ok.iterrows() if row[Col.RUN_ID] in traces]
    figure = new_figure(FRAME_INCHES + PANEL_INCHES * len(rows), SUMMARY_WIDTH_INCHES)
    panels = figure.subplots(len(rows), 1, sharex=True, sharey=True, squeeze=False)[:, 0]
    devices: dict[int, str] = {}
    shaded: set[str] = set()
    for axes, row in zip(panels, rows):
        phases = run_phases(row)
        shaded |= {phase.name for phase in phases}
        shade_phases(axes, phases, labelled=False)
        for index, ((kind, device), samples) in enumerate(
            traces[row[Col.RUN_ID]].groupby(["kind", "device"], sort=True)
        ):
            devices.setdefault(index, f"GPU {device}" if kind == "gpu" else "host CPU")
            color = DEVICE_COLORS[index % len(DEVICE_COLORS)]
            axes.plot(samples["seconds"], samples["utilization_pct"], color=color, linewidth=0.9)
        median = number(row.get(Col.UTILISATION_PCT))
        steady = f"steady median {median:.0f}%" if median is not None else "no steady sample"
        axes.set_ylabel(f"{run_label(row)}\n{steady}", rotation=0, ha="right", va="center", fontsize="small")
        axes.set_ylim(0, 105)
        axes.set_yticks([0, 50, 100])
        axes.grid(alpha=0.3)
    what = source_word(ok)
    panels[-1].set_xlabel(f"seconds since the run's launch;\n{what} utilisation % per device")
    handles = [
        Patch(color=PHASE_COLORS[name], alpha=min(1.0, 2 * PHASE_ALPHA.get(name, OTHER_ALPHA)), label=name)
        for name in PHASES
        if name in shaded
    ]
    handles += [Patch(color=DEVICE_COLORS[i % len(DEVICE_COLORS)], label=label) for i, label in sorted(devices.items())]
    figure.legend(handles=handles, loc="outside lower center", ncol=min(len(handles), 4), fontsize="small")
    figure.suptitle(f"{what} utilisation of every run, phases shaded:\n{job_title(ok)}")
    return save(figure, path)


def _whiskers(middle: pd.Series, low: pd.Series, high: pd.Series) -> np.ndarray:
    """Each bar's distance down to its p10 and up to its p90 (matplotlib's `xerr`); none where a
    row lacks either."""
    middle, low, high = (values.astype(float).to_numpy() for values in (middle, low, high))
    below, above = np.clip(middle - low, 0, None), np.clip(high - middle, 0, None)
    return np.nan_to_num(np.vstack([below, above]))


def _column(rows: pd.DataFrame, name: str) -> pd.Series:
    """A figure's column, NaN throughout where no row holds it."""
    return rows[name].astype(float) if name in rows else pd.Series(np.nan, index=rows.index)


def _label_bars(axes: Axes, values: pd.Series, high: pd.Series, texts: list[str]) -> None:
    """Each bar's figure right of its bar or its whisker, whichever reaches further."""
    ends = np.fmax(values.fillna(0).to_numpy(dtype=float), high.to_numpy(dtype=float))
    for position, (end, text) in enumerate(zip(ends, texts)):
        axes.text(end, position, f" {text}", va="center", fontsize="small")


def throughput_and_utilisation_chart(ok: pd.DataFrame, path: Path) -> Path:
    """One bar per run, in the frame's order: its rate in its model's unit (left) beside utilisation over the steady
    window (right), each with its p10-p90; a run with much throughput for little utilisation, or
    busy devices and little throughput, stands out at a glance."""
    rows = ok.reset_index(drop=True)
    figure = new_figure(width_inches=SUMMARY_WIDTH_INCHES)
    rate_axes, use_axes = figure.subplots(1, 2, sharey=True)
    positions = np.arange(len(rows))
    unit = frame_unit(ok)
    rate, rate_low, rate_high = (
        _column(rows, f"samples_per_sec{end}") * unit.per_sample for end in ("", "_p10", "_p90")
    )
    scale, scaled = scale_of(rate_high.fillna(rate))
    texts = [bar_text(value) for value in rate]
    rate, rate_low, rate_high = rate / scale, rate_low / scale, rate_high / scale
    rate_axes.barh(positions, rate, 0.6, color="tab:blue")
    rate_axes.errorbar(rate, positions, xerr=_whiskers(rate, rate_low, rate_high), fmt="none", ecolor="black")
    _label_bars(rate_axes, rate, rate_high, texts)
    rate_axes.set_xlim(0, float(np.nanmax(rate_high.fillna(rate))) * 1.3)
    rate_axes.set_xlabel(f"{unit.heading}{scaled}\n(whiskers: p10-p90\nof single steps)")
    use, use_low, use_high = (_column(rows, f"utilisation{end}_pct") for end in ("", "_p10", "_p90"))
    use_axes.barh(positions, use.fillna(0), 0.6, color="tab:green")
    use_axes.errorbar(use.fillna(0), positions, xerr=_whiskers(use, use_low, use_high), fmt="none", ecolor="black")
    _label_bars(use_axes, use, use_high, [f"{v:.0f}%" if not np.isnan(v) else "no sample" for v in use])
    use_axes.set_xlim(0, 130)
    use_axes.set_xticks([0, 25, 50, 75, 100])
    use_axes.set_xlabel(f"{source_word(ok)} utilisation %\n(steady window;\nwhiskers: p10-p90)")
    rate_axes.set_yticks(positions, [run_label(row) for _, row in rows.iterrows()])
    rate_axes.invert_yaxis()
    for axes in (rate_axes, use_axes):
        axes.grid(axis="x", alpha=0.3)
    figure.suptitle(f"Throughput and utilisation per run:\n{job_title(ok)}")
    return save(figure, path)
