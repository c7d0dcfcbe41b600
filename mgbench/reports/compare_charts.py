"""Charts across the runs of a compare: throughput, scaling, time breakdown, training curves.

Each function takes the successful runs only (`status == ok`) and says in its title what job
they ran, so a chart copied out of the report still tells what it compares.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from mgbench.reports.figures import job_title, new_figure, run_label, save
from mgbench.reports.summary import GROUP


def _group_label(key: tuple) -> str:
    return " ".join(str(part) for part in key)


def throughput_chart(ok: pd.DataFrame, path: Path) -> Path:
    """Bars of median images/sec per framework/strategy, one bar per device count, p10-p90 whiskers."""
    groups = list(ok.groupby(GROUP, sort=True))
    counts = sorted(ok["devices"].unique())
    width = min(0.8 / len(counts), 0.3)
    figure = new_figure()
    axes = figure.subplots()
    for position, count in enumerate(counts):
        xs, heights, low, high = [], [], [], []
        for index, (_, group) in enumerate(groups):
            match = group[group["devices"] == count]
            if match.empty:
                continue
            run = match.iloc[0]
            xs.append(index + width * (position - (len(counts) - 1) / 2))
            heights.append(run["images_per_sec"])
            low.append(run["images_per_sec"] - run["images_per_sec_p10"])
            high.append(run["images_per_sec_p90"] - run["images_per_sec"])
        bars = axes.bar(xs, heights, width, yerr=[low, high], capsize=3, label=f"{count} device{'s' if count > 1 else ''}")
        axes.bar_label(bars, fmt="%.0f", padding=2, fontsize="small")
    axes.set_xticks(range(len(groups)), [_group_label(key) for key, _ in groups])
    axes.set_xlim(-0.75, len(groups) - 0.25)
    axes.set_ylabel("images/sec (median, whiskers p10-p90)")
    axes.grid(axis="y", alpha=0.3)
    axes.legend()
    axes.set_title(f"Throughput: {job_title(ok)}, {_devices_text(counts)}")
    return save(figure, path)


def _devices_text(counts: list) -> str:
    return "devices " + ", ".join(str(int(c)) for c in counts)


def scaling_chart(ok: pd.DataFrame, path: Path) -> Path:
    """Speed-up (left) and efficiency (right) against device count, with the ideal (linear) line."""
    figure = new_figure()
    speedup_axes, efficiency_axes = figure.subplots(1, 2)
    counts = np.array(sorted(ok["devices"].unique()), dtype=float)
    base = counts[0]
    speedup_axes.plot(counts, counts / base, color="grey", linestyle="--", label="ideal (linear)")
    efficiency_axes.axhline(100, color="grey", linestyle="--", label="ideal")
    for key, group in ok.groupby(GROUP, sort=True):
        group = group.sort_values("devices")
        speedup_axes.plot(group["devices"], group["speedup"], marker="o", label=_group_label(key))
        efficiency_axes.plot(group["devices"], group["efficiency"] * 100, marker="o", label=_group_label(key))
    for axes in (speedup_axes, efficiency_axes):
        axes.set_xlabel("devices")
        axes.set_xticks(counts)
        axes.grid(alpha=0.3)
        axes.legend(fontsize="small")
    speedup_axes.set_ylabel(f"speed-up over {int(base)} device{'s' if base > 1 else ''}")
    efficiency_axes.set_ylabel("scaling efficiency %")
    efficiency_axes.set_ylim(0, max(110, float(np.nanmax(ok["efficiency"])) * 105))
    figure.suptitle(f"Scaling: {job_title(ok)}, {_devices_text(list(counts))}")
    return save(figure, path)


def breakdown_chart(ok: pd.DataFrame, path: Path) -> Path:
    """Share of steady step time per run: waiting for input, communication (where measured), compute.

    Communication appears only for rows whose adapter reported `communication_fraction`; it is
    never estimated here, and compute is what is left of the step.
    """
    ordered = ok.sort_values(GROUP + ["devices"])
    labels = [run_label(row) for _, row in ordered.iterrows()]
    waiting = ordered["input_wait_fraction"].fillna(0).to_numpy() * 100
    has_communication = "communication_fraction" in ordered and ordered["communication_fraction"].notna().any()
    communication = (
        ordered["communication_fraction"].fillna(0).to_numpy() * 100 if has_communication else np.zeros(len(ordered))
    )
    compute = np.clip(100 - waiting - communication, 0, 100)
    figure = new_figure()
    axes = figure.subplots()
    positions = np.arange(len(labels))
    height = 0.6
    axes.barh(positions, compute, height, color="tab:blue", label="compute (rest of the step)")
    left = compute.copy()
    if has_communication:
        axes.barh(positions, communication, height, left=left, color="tab:purple", label="communication")
        left += communication
    axes.barh(positions, waiting, height, left=left, color="tab:orange", label="waiting for input")
    for position, wait in zip(positions, waiting):
        axes.text(101, position, f"input {wait:.1f}%", va="center", fontsize="small")
    axes.set_yticks(positions, labels)
    axes.invert_yaxis()
    axes.set_xlim(0, 120)
    axes.set_xticks(range(0, 101, 20))
    axes.set_xlabel("% of steady-state step time")
    axes.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=3, fontsize="small")
    axes.set_title(f"Where step time goes: {job_title(ok)}")
    return save(figure, path)


def epoch_chart(ok: pd.DataFrame, path: Path) -> Path:
    """Loss (left) and validation AUC (right) per epoch, one line per run: does N devices learn like 1?"""
    figure = new_figure()
    loss_axes, auc_axes = figure.subplots(1, 2)
    for _, row in ok.sort_values(GROUP + ["devices"]).iterrows():
        epochs = pd.DataFrame(row["epoch_metrics"])
        label = run_label(row)
        if "train_loss" in epochs:
            line = loss_axes.plot(epochs["epoch"], epochs["train_loss"], marker="o", label=f"{label} train")[0]
            color = line.get_color()
        else:
            color = None
        if "val_loss" in epochs:
            loss_axes.plot(epochs["epoch"], epochs["val_loss"], marker="s", linestyle="--", color=color, label=f"{label} val")
        if "val_auc" in epochs:
            auc_axes.plot(epochs["epoch"], epochs["val_auc"], marker="o", color=color, label=label)
    loss_axes.set_ylabel("loss (solid: train, dashed: validation)")
    auc_axes.set_ylabel("validation AUC")
    for axes in (loss_axes, auc_axes):
        axes.set_xlabel("epoch")
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
        axes.grid(alpha=0.3)
        if axes.get_legend_handles_labels()[0]:
            axes.legend(fontsize="small")
    figure.suptitle(f"Training curves, 1 vs N devices: {job_title(ok)}")
    return save(figure, path)
