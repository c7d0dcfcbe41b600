"""Charts of one run: device utilisation and memory over time, throughput over steps.

These answer "what did the devices do during this run" (idle GPUs, one GPU working while the
others wait, memory growth) and "when did it reach steady state" (the detected warm-up shaded).
"""

from __future__ import annotations

import numbers
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.ticker import MaxNLocator

from mgbench.measure.phases import (
    COMPILE,
    EPOCH_START,
    EVALUATION,
    PROFILE,
    STALL,
    STARTUP,
    STEADY,
    WARMUP,
    Phase,
    row_window,
    run_phases,
)
from mgbench.reports.cells import number
from mgbench.reports.columns import Col
from mgbench.reports.figures import bar_text, finite, legend_outside, new_figure, run_title, save, scale_of
from mgbench.reports.units import row_unit


def _device_label(kind: str, device: object) -> str:
    return "CPU (all cores)" if kind == "cpu" else f"GPU {device}"


PHASE_COLORS = {
    STARTUP: "tab:gray",
    COMPILE: "tab:red",
    EPOCH_START: "tab:olive",
    WARMUP: "tab:orange",
    STEADY: "tab:green",
    STALL: "tab:brown",
    PROFILE: "tab:purple",
    EVALUATION: "tab:blue",
}
"""Each phase's shade, the same on every chart that shades phases."""
PHASE_ALPHA = {STEADY: 0.18, STALL: 0.35}
"""The steady phases, which the row's figures are taken over, shaded strong, a stall in them
stronger; the others at `OTHER_ALPHA`."""
OTHER_ALPHA = 0.08


def shade_phases(axes: Axes, phases: list[Phase], labelled: bool = True) -> None:
    """Shade each phase across `axes`, labelled once per name for a legend where `labelled`."""
    named: set[str] = set()
    for phase in phases:
        label = phase.name if labelled and phase.name not in named else None
        named.add(phase.name)
        alpha = PHASE_ALPHA.get(phase.name, OTHER_ALPHA)
        axes.axvspan(phase.start, phase.end, color=PHASE_COLORS[phase.name], alpha=alpha, label=label, linewidth=0)


def utilisation_chart(row: pd.Series, trace: pd.DataFrame, path: Path) -> Path:
    """Top: utilisation % per device; bottom: memory the device holds (dotted: its capacity) beside
    the framework's own peak (dashed), which can be far lower (JAX preallocates most of the device).
    Both panels shade the run's phases (`phases.run_phases`), the steady ones strongest."""
    figure = new_figure()
    top, bottom = figure.subplots(2, 1, sharex=True)
    phases = run_phases(row)
    shade_phases(top, phases)
    shade_phases(bottom, phases, labelled=False)
    for (kind, device), samples in trace.groupby(["kind", "device"], sort=True):
        label = _device_label(str(kind), device)
        line = top.plot(samples["seconds"], samples["utilization_pct"], label=label, linewidth=1.2)[0]
        bottom.plot(samples["seconds"], samples["memory_used_mib"] / 1024, label=label, color=line.get_color())
        capacity = samples["memory_total_mib"].max() / 1024
        bottom.axhline(capacity, color=line.get_color(), linestyle=":", linewidth=1)
    kinds = set(trace["kind"])
    what = "CPU" if kinds == {"cpu"} else "GPU"
    top.set_ylabel(f"{what} utilisation %")
    top.set_ylim(0, 105)
    top.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small")
    top.grid(alpha=0.3)
    peak = row.get(Col.PEAK_MEMORY_BYTES)
    # numbers.Real, not int | float: a column with no gap holds numpy integers.
    if isinstance(peak, numbers.Real) and (peak_bytes := float(peak)) > 0 and not np.isnan(peak_bytes):
        bottom.axhline(
            peak_bytes / 2**30,
            color="black",
            linestyle="--",
            linewidth=1,
            label=f"framework's own peak {peak_bytes / 2**30:.2f} GiB",
        )
        bottom.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small")
    memory_what = "host memory used" if kinds == {"cpu"} else "GPU memory held (NVML)"
    bottom.set_ylabel(f"{memory_what} GiB")
    bottom.set_xlabel("seconds since the run started (dotted: capacity)")
    bottom.set_ylim(bottom=0)
    bottom.grid(alpha=0.3)
    figure.suptitle(f"Utilisation: {run_title(row)}")
    return save(figure, path)


def step_throughput_chart(row: pd.Series, path: Path) -> Path:
    """The rate of every step in its model's unit (img/s, tokens/s), the detected warm-up shaded,
    stalls marked, the steady rate as a line."""
    unit = row_unit(row)
    seconds = np.asarray(row[Col.STEP_SECONDS], dtype=float)
    rate = finite(unit.of(row[Col.GLOBAL_BATCH]) / seconds)
    steady_rate = number(row[Col.SAMPLES_PER_SEC])
    rate_line = None if steady_rate is None else unit.of(steady_rate)
    scale, scaled = scale_of([*rate, rate_line])
    rate /= scale
    steps = np.arange(1, len(seconds) + 1)
    warmup = int(number(row[Col.WARMUP_STEPS]) or 0)
    figure = new_figure()
    axes = figure.subplots()
    axes.plot(steps, rate, marker=".", linewidth=1, label=f"{unit.heading} per step")
    if warmup:
        detected = "detected" if row[Col.WARMUP_DETECTED] else "not detected: run too short or never steady"
        axes.axvspan(0.5, warmup + 0.5, color="tab:orange", alpha=0.2, label=f"warm-up, {warmup} steps ({detected})")
    stalls = list(row_window(row).stalls)
    if stalls:
        label = f"stalls, {len(stalls)} step{'s' if len(stalls) > 1 else ''} (left out of the steady rate)"
        axes.scatter(steps[stalls], rate[stalls], color="tab:red", zorder=3, label=label)
    if rate_line is not None:
        steady = f"{rate_line:.1f}" if scale == 1 else bar_text(rate_line)
        axes.axhline(rate_line / scale, color="tab:green", linestyle="--", label=f"steady rate {steady}")
    axes.set_xlabel("step")
    axes.set_ylabel(f"{unit.heading}{scaled}")
    axes.set_ylim(bottom=0)
    axes.set_xlim(0.5, len(steps) + 0.5)
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.grid(alpha=0.3)
    legend_outside(figure, axes, columns=3)
    axes.set_title(f"Throughput over steps: {run_title(row)}")
    return save(figure, path)
