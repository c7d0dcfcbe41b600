"""The projection's chart: efficiency (left) and the rate (right, in the model's unit) against GPUs, log scales.

Per series, one colour: the projected line solid, the model before calibration dashed where
calibration moved it, the measured rows as large ringed points, so what was measured and what
is modelled are never confused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from mgbench.core.inputs import IMAGES, RateUnit
from mgbench.projection.model import EFFICIENCY_FLOOR
from mgbench.reports.figures import finite, legend_outside, new_figure, save, scale_of


def _percent(values: list[float | None]) -> np.ndarray:
    """Efficiencies in percent, a null one (past a float's range) NaN: left out of the line."""
    return finite(values) * 100


def projection_chart(projection: dict[str, Any], path: Path, unit: RateUnit = IMAGES) -> Path:
    """Per series its projected, unfitted and measured efficiency and rate in `unit` (module doc);
    the rate in a power of ten where it lies past a billion (`scale_of`)."""
    figure = new_figure()
    efficiency_axes, throughput_axes = figure.subplots(1, 2)
    rates = [
        point["samples_per_sec"] for series in projection["series"] for point in series["curve"] + series["measured"]
    ]
    scale, scaled = scale_of([None if rate is None else unit.of(rate) for rate in rates])
    scale /= unit.per_sample  # a rate held per sample, drawn in `unit`
    efficiency_axes.axhline(EFFICIENCY_FLOOR * 100, color="grey", linestyle=":", label=f"{EFFICIENCY_FLOOR:.0%}")
    for series in projection["series"]:
        label = f"{series['framework']} {series['strategy']}"
        devices = [point["devices"] for point in series["curve"]]
        line = efficiency_axes.plot(
            devices, _percent([p["efficiency"] for p in series["curve"]]), label=f"{label} projected"
        )
        color = line[0].get_color()
        throughput_axes.plot(devices, finite([p["samples_per_sec"] for p in series["curve"]]) / scale, color=color)
        if (series["overhead_seconds"] or 0) > 0:
            efficiency_axes.plot(
                devices,
                _percent([p["unfitted_efficiency"] for p in series["curve"]]),
                color=color,
                linestyle="--",
                label=f"{label} before calibration",
            )
        measured = series["measured"]
        for axes, values in (
            (efficiency_axes, _percent([m["efficiency"] for m in measured])),
            (throughput_axes, finite([m["samples_per_sec"] for m in measured]) / scale),
        ):
            axes.scatter(
                [m["devices"] for m in measured],
                values,
                s=70,
                color=color,
                edgecolors="black",
                zorder=3,
                label=f"{label} measured" if axes is efficiency_axes else None,
            )
    counts = sorted({point["devices"] for series in projection["series"] for point in series["curve"]})
    for axes in (efficiency_axes, throughput_axes):
        axes.set_xscale("log", base=2)
        axes.set_xticks(counts, [str(count) for count in counts], fontsize="small")
        axes.set_xlabel("GPUs")
        axes.grid(alpha=0.3, which="both")
    throughput_axes.set_yscale("log")
    efficiency_axes.set_ylabel("efficiency % (against one GPU)")
    efficiency_axes.set_ylim(0, 110)
    throughput_axes.set_ylabel(f"{unit.heading}{scaled}")
    legend_outside(figure, efficiency_axes)
    within, across = projection["interconnect"]["within"], projection["interconnect"]["across"]
    links = within["name"] + (f" + {projection['interconnect']['nics_per_node']} x {across['name']}" if across else "")
    jobs = "/".join(dict.fromkeys(f"{series['model']} {series['precision']}" for series in projection["series"]))
    figure.suptitle(f"Projected scaling of {jobs}: lines modelled on {links}, points measured on this machine")
    return save(figure, path)
