"""Charts across the runs of a compare: throughput, scaling and its loss, time breakdown, training curves.

Each function takes the successful runs only (`status == ok`) and says in its title what job
they ran, so a chart copied out of the report still tells what it compares.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from mgbench.core.kinds import DeviceKind
from mgbench.measure.breakdown import CATEGORIES, has_breakdown
from mgbench.measure.timing import HOST_PHASES
from mgbench.reports.cells import number, run_label
from mgbench.reports.columns import Col
from mgbench.reports.figures import bar_text, finite, job_title, legend_outside, new_figure, save, scale_of
from mgbench.reports.judged import curve_metric
from mgbench.reports.readings import COLORS, HOST_COLORS, HOST_LABELS, LABELS, has_host_timing, held_back
from mgbench.reports.scaling_loss import ScalingLoss
from mgbench.reports.summary import GROUP
from mgbench.reports.units import frame_unit

WHAT_BARS_SHOW = "bar: the steady rate (the steady window's images over its seconds, warm-up and stalls left out)"
WHAT_WHISKERS_SHOW = "p10-p90 of single steps' rates (a row whose rate lies outside them says why)"
UNSPLIT = "rest of the step (not profiled)"
UNEXPLAINED = "unexplained"


def _group_label(key: tuple) -> str:
    return " ".join(str(part) for part in key)


THROUGHPUT_CAPTION = f"{WHAT_BARS_SHOW};\nwhiskers: {WHAT_WHISKERS_SHOW}"
"""What the throughput chart's bars and whiskers are, said under it."""


def throughput_chart(ok: pd.DataFrame, path: Path) -> Path:
    """Bars of the steady rate per framework/strategy in its model's unit (`units.frame_unit`:
    img/s, tokens/s), one bar per device count,
    whiskers from the p10 to the p90 of single steps' rates, wherever those lie against the bar
    (`THROUGHPUT_CAPTION` says what each is)."""
    groups = list(ok.groupby(GROUP, sort=True))
    counts = sorted(ok[Col.DEVICES].unique())
    width = min(0.8 / len(counts), 0.3)
    figure = new_figure()
    axes = figure.subplots()
    unit = frame_unit(ok)
    scale, scaled = scale_of(ok[Col.SAMPLES_PER_SEC_P90].fillna(ok[Col.SAMPLES_PER_SEC]) * unit.per_sample)
    tops = [0.0]
    for position, count in enumerate(counts):
        xs, heights, spreads = [], [], []
        for index, (_, group) in enumerate(groups):
            match = group[group[Col.DEVICES] == count]
            if match.empty:
                continue
            run = match.iloc[0]
            xs.append(index + width * (position - (len(counts) - 1) / 2))
            heights.append(unit.of(float(run[Col.SAMPLES_PER_SEC])))
            low, high = number(run[Col.SAMPLES_PER_SEC_P10]), number(run[Col.SAMPLES_PER_SEC_P90])
            spreads.append((None if low is None else unit.of(low), None if high is None else unit.of(high)))
        axes.bar(xs, [height / scale for height in heights], width, label=f"{count} device{'s' if count > 1 else ''}")
        for x, height, (low, high) in zip(xs, heights, spreads, strict=True):
            top = height / scale
            if low is not None and high is not None:
                low, high = low / scale, high / scale
                axes.errorbar(x, (low + high) / 2, yerr=(high - low) / 2, fmt="none", ecolor="black", capsize=3)
                top = max(top, high)  # the figure sits above the whisker's cap, never on it
            axes.annotate(
                bar_text(height), (x, top), xytext=(0, 3), textcoords="offset points", ha="center", fontsize="small"
            )
            tops.append(top)
    axes.set_xticks(range(len(groups)), [_group_label(key) for key, _ in groups])
    axes.set_xlim(-0.75, len(groups) - 0.25)
    axes.set_ylim(0, max(tops) * 1.12 or 1.0)
    axes.set_ylabel(f"{unit.heading}{scaled}")
    axes.grid(axis="y", alpha=0.3)
    legend_outside(figure, axes, columns=1, where="outside right upper")
    axes.set_title(f"Throughput: {job_title(ok)}, {_devices_text(counts)}")
    figure.supxlabel(THROUGHPUT_CAPTION, fontsize="small")
    return save(figure, path)


def _devices_text(counts: list) -> str:
    return "devices " + ", ".join(str(int(c)) for c in counts)


def scaling_chart(ok: pd.DataFrame, path: Path) -> Path:
    """Speed-up (left) and efficiency (right) against device count, with the ideal (linear) line."""
    figure = new_figure()
    speedup_axes, efficiency_axes = figure.subplots(1, 2)
    counts = np.array(sorted(ok[Col.DEVICES].unique()), dtype=float)
    base = counts[0]
    speedup_scale, speedup_scaled = scale_of([*counts / base, *ok[Col.SPEEDUP]])
    efficiency_scale, efficiency_scaled = scale_of([100.0, *ok[Col.SCALING_EFFICIENCY_FRACTION] * 100])
    ideal = "ideal (linear)"  # one label on both panels: one legend entry
    speedup_axes.plot(counts, counts / base / speedup_scale, color="grey", linestyle="--", label=ideal)
    efficiency_axes.axhline(100 / efficiency_scale, color="grey", linestyle="--", label=ideal)
    for key, group in ok.groupby(GROUP, sort=True):
        group = group.sort_values("devices")
        speedups = finite(group[Col.SPEEDUP]) / speedup_scale  # an overflowed speed-up is left out
        efficiencies = finite(group[Col.SCALING_EFFICIENCY_FRACTION] * 100) / efficiency_scale
        speedup_axes.plot(group[Col.DEVICES], speedups, marker="o", label=_group_label(key))
        efficiency_axes.plot(group[Col.DEVICES], efficiencies, marker="o", label=_group_label(key))
    for axes in (speedup_axes, efficiency_axes):
        axes.set_xlabel("devices")
        axes.set_xticks(counts)
        axes.grid(alpha=0.3)
    legend_outside(figure, speedup_axes, efficiency_axes)
    speedup_axes.set_ylabel(f"speed-up over {int(base)} device{'s' if base > 1 else ''}{speedup_scaled}")
    efficiency_axes.set_ylabel(f"scaling efficiency %{efficiency_scaled}")
    highest = np.nanmax(finite(ok[Col.SCALING_EFFICIENCY_FRACTION] * 100), initial=0) / efficiency_scale
    efficiency_axes.set_ylim(0, max(110 / efficiency_scale, highest * 1.05))
    figure.suptitle(f"Scaling: {job_title(ok)}, {_devices_text(list(counts))}")
    return save(figure, path)


def _style(name: str) -> dict[str, Any]:
    """A category's colour (keywords of matplotlib's bar); what is not a category (unsplit, unexplained) hatched on white."""
    return {"color": COLORS[name]} if name in COLORS else {"color": "white", "edgecolor": "grey", "hatch": "//"}


HOST_KEYS = {name: f"host_{name}" for name in HOST_PHASES}
"""The host timing's shares under keys of their own: its input wait is not the profile's."""


def _split(row: pd.Series) -> tuple[dict[str, float], str]:
    """The row's step split in percent (a profile's categories, or the host timing's phases under
    `HOST_KEYS`) and what it came from; empty where neither split it."""
    if has_breakdown(row.get(Col.BREAKDOWN)):
        source = " (CPU trace)" if row.get(Col.BREAKDOWN_CLOCK) == "cpu" else ""
        return {name: row[Col.BREAKDOWN][name] * 100 for name in CATEGORIES}, source
    if not DeviceKind(row[Col.DEVICE_KIND]).on_gpu and has_host_timing(row.get(Col.HOST_BREAKDOWN)):
        return {HOST_KEYS[name]: row[Col.HOST_BREAKDOWN][name] * 100 for name in HOST_PHASES}, " (host timing)"
    return {}, " (not profiled)"


def splits_any_step(ok: pd.DataFrame) -> bool:
    """Whether any row's step was split (a profile, or a CPU row's host timing): where none was,
    a chart of where step time goes would show nothing but unsplit bars."""
    return any(_split(row)[0] for _, row in ok.iterrows())


def breakdown_chart(ok: pd.DataFrame, path: Path) -> Path:
    """Share of the step per run, in `ok`'s order: the profiled step's input wait, host-to-device, compute,
    communication and idle (`breakdown`); on CPU devices not profiled, the host's own timing of
    its steps (input wait, step call, synchronisation, loss read), said so in its label; other
    rows their timed input wait and the rest of the step, unsplit."""
    labels, shares = [], []
    for _, row in ok.iterrows():
        split, source = _split(row)
        if not split:
            waiting = float(np.nan_to_num(row[Col.INPUT_WAIT_FRACTION])) * 100
            split = {"input_wait": waiting, UNSPLIT: 100 - waiting}
        shares.append(split)
        labels.append(run_label(row) + source)
    figure = new_figure()
    axes = figure.subplots()
    positions = np.arange(len(labels))
    left = np.zeros(len(labels))
    names = {**LABELS, **{key: f"{HOST_LABELS[name]} (host)" for name, key in HOST_KEYS.items()}}
    colors = {**COLORS, **{key: HOST_COLORS[name] for name, key in HOST_KEYS.items()}}
    for name in (*CATEGORIES, *HOST_KEYS.values(), UNSPLIT):
        widths = np.array([share.get(name, 0.0) for share in shares])
        if not widths.any():
            continue
        style: dict[str, Any] = {"color": colors[name]} if name in colors else _style(name)
        axes.barh(positions, widths, 0.6, left=left, label=names.get(name, name), **style)
        left += widths
    for position, (_, row) in zip(positions, ok.iterrows(), strict=True):
        held = held_back(row)
        if held is not None:
            axes.text(101, float(position), f"{held.label} {held.fraction:.0%}", va="center", fontsize="small")
    axes.set_yticks(positions, labels)
    axes.invert_yaxis()
    axes.set_xlim(0, 125)
    axes.set_xticks(range(0, 101, 20))
    axes.set_xlabel("% of the step (right: the bottleneck)")
    legend_outside(figure, axes, columns=5)
    axes.set_title(f"Where step time goes: {job_title(ok)}")
    return save(figure, path)


def scaling_loss_chart(ok: pd.DataFrame, losses: list[ScalingLoss], path: Path) -> Path:
    """A waterfall per framework/strategy and device count: from the ideal speed-up down to the
    measured one, each category taking the speed-up it cost (a rise where it gained)."""
    steps = [*CATEGORIES, UNEXPLAINED]
    bars = len(steps) + 2
    width = 0.9 / bars
    figure = new_figure()
    axes = figure.subplots()
    named: set[str] = set()
    heights = [0.0]
    for index, loss in enumerate(losses):
        x = index - 0.45 + width / 2
        axes.bar(x, loss.ideal, width, color="lightgrey", edgecolor="grey", label=None if index else "ideal")
        axes.text(x, loss.ideal, f"{loss.ideal:.3g}x", ha="center", va="bottom", fontsize="small")
        level = loss.ideal
        for offset, name in enumerate(steps, start=1):
            cost = loss.unexplained if name == UNEXPLAINED else loss.losses[name]
            label = LABELS.get(name, name) if name not in named else None
            named.add(name)
            axes.bar(x + offset * width, -cost, width, bottom=level, label=label, **_style(name))
            heights += [level, level - cost]
            level -= cost
        x_measured = x + (bars - 1) * width
        axes.bar(x_measured, loss.measured, width, color="tab:green", label=None if index else "measured")
        axes.text(x_measured, loss.measured, f"{loss.measured:.2f}x", ha="center", va="bottom", fontsize="small")
        heights += [loss.ideal, loss.measured]
    axes.axhline(0, color="black", linewidth=0.8)
    axes.set_xticks(range(len(losses)), [loss.label for loss in losses])
    axes.set_xlim(-0.6, len(losses) - 0.4)
    axes.set_ylim(min(heights) * 1.1, max(heights) * 1.1)
    axes.set_ylabel("speed-up over the smallest device count")
    axes.grid(axis="y", alpha=0.3)
    legend_outside(figure, axes, columns=1, where="outside right upper")
    axes.set_title(f"Scaling loss, ideal to measured speed-up: what each category cost ({job_title(ok)})")
    return save(figure, path)


def epoch_chart(ok: pd.DataFrame, path: Path) -> Path:
    """Loss (left) and a validation metric (right: AUC, a language model's perplexity:
    `judged.curve_metric`) per epoch, one line per run: does N devices learn like 1?"""
    metric = curve_metric(ok)
    figure = new_figure()
    loss_axes, auc_axes = figure.subplots(1, 2)
    for _, row in ok.sort_values(GROUP + ["devices"]).iterrows():
        epochs = pd.DataFrame(row[Col.EPOCH_METRICS])
        label = run_label(row)
        if "train_loss" in epochs:
            line = loss_axes.plot(epochs["epoch"], epochs["train_loss"], marker="o", label=f"{label} train")[0]
            color = line.get_color()
        else:
            color = None
        if "val_loss" in epochs:
            loss_axes.plot(
                epochs["epoch"], epochs["val_loss"], marker="s", linestyle="--", color=color, label=f"{label} val"
            )
        if f"val_{metric.name}" in epochs:
            auc_axes.plot(epochs["epoch"], epochs[f"val_{metric.name}"], marker="o", color=color, label=label)
    loss_axes.set_ylabel("loss (solid: train, dashed: validation)")
    auc_axes.set_ylabel(f"validation {metric.label}")
    for axes in (loss_axes, auc_axes):
        axes.set_xlabel("epoch")
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
        axes.grid(alpha=0.3)
    legend_outside(figure, loss_axes, auc_axes)
    figure.suptitle(f"Training curves, 1 vs N devices: {job_title(ok)}")
    return save(figure, path)
