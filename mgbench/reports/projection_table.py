"""A projection (`projection.json`, `mgbench.projection.calibration`) as the report and the
console show it: a table per series and the notes that say what it was projected from."""

from __future__ import annotations

from typing import Any

from mgbench.projection.calibration import InputRate
from mgbench.projection.model import EFFICIENCY_FLOOR

PROJECTION_COLUMNS = (
    "GPUs",
    "nodes",
    "step ms",
    "images/sec",
    "efficiency",
    "before calibration",
    "epoch",
    "limited by",
)


def _duration(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.1f} s"


def series_title(series: dict[str, Any]) -> str:
    return (
        f"{series['framework']} {series['strategy']}: {series['model']} {series['precision']}, "
        f"{series['batch_per_device']} per GPU"
    )


def series_rows(series: dict[str, Any]) -> list[tuple[str, ...]]:
    """The projection at each count as the table shows it (`PROJECTION_COLUMNS`)."""
    return [
        (
            str(point["devices"]),
            str(point["nodes"]),
            f"{point['step_seconds'] * 1e3:.1f}",
            f"{point['images_per_sec']:.0f}",
            f"{point['efficiency']:.1%}",
            f"{point['unfitted_efficiency']:.1%}",
            _duration(point["epoch_seconds"]),
            point["limiter"],
        )
        for point in series["projection"]
    ]


def series_notes(series: dict[str, Any]) -> list[str]:
    """What the series was projected from, how the calibration went, and where it stops scaling."""
    inputs = series["inputs"]
    rate = inputs["input"]
    notes = [
        f"one-GPU step {inputs['one_device_step_seconds'] * 1e3:.1f} ms ({inputs['one_device_step_source']}), "
        f"gradients {inputs['gradient_bytes'] / 1e6:.3g} MB in {inputs['tensors']} tensors, exchanged as "
        f"{inputs['exchange']['text']}, which can hide behind "
        f"{inputs['overlap_share']:.0%} of the compute ({inputs['overlap_source']}), "
        + InputRate(rate["kind"], rate["images_per_sec_per_node"]).text(),
        f"host: the one-GPU step less its compute ({inputs['compute_source']}) and the loaders' wait where they "
        f"limit, {inputs['host_seconds'] * 1e3:.2f} ms, done by {inputs['dispatch']['text']}",
    ]
    notes += [
        f"calibration: {check['devices']} GPUs measured {check['measured_efficiency']:.1%}, the model before "
        f"calibration {check['unfitted_efficiency']:.1%} ({check['residual_points']:+.1f} points)"
        for check in series["calibration"]
    ]
    if series["calibration"]:
        notes.append(f"fitted overhead per multi-GPU step: {series['overhead_seconds'] * 1e3:.2f} ms")
    floor = series["below_floor_at"]
    notes.append(
        f"limits first: {series['limits_first']}; "
        + (
            f"efficiency under {EFFICIENCY_FLOOR:.0%} from {floor} GPUs"
            if floor
            else f"efficiency stays at or above {EFFICIENCY_FLOOR:.0%} up to {series['scanned_up_to']} GPUs"
        )
    )
    return notes
