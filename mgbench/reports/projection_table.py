"""A projection (`projection.json`, `mgbench.projection.calibration`) as the report and the
console show it: a table per series and the notes that say what it was projected from, its rates
in the unit of the folder's model (`units.frame_unit`: img/s, tokens/s)."""

from __future__ import annotations

from typing import Any

from mgbench.core.inputs import IMAGES, RateUnit
from mgbench.projection.calibration import InputRate
from mgbench.projection.model import EFFICIENCY_FLOOR
from mgbench.reports.cells import MISSING, figure_text


def projection_columns(unit: RateUnit = IMAGES) -> tuple[str, ...]:
    """The table's headers, the rate's in `unit`."""
    return ("GPUs", "nodes", "step ms", unit.heading, "efficiency", "before calibration", "epoch", "limited by")


def _shown(value: float | None, pattern: str, factor: float = 1.0) -> str:
    """`value` x `factor` in `pattern`; `MISSING` where the projection holds none (a figure past a
    float's range is null in `projection.json`)."""
    return MISSING if value is None else figure_text(float(value) * factor, pattern)


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return MISSING
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.1f} s"


def series_title(series: dict[str, Any]) -> str:
    return (
        f"{series['framework']} {series['strategy']}: {series['model']} {series['precision']}, "
        f"{series['batch_per_device']} per GPU"
    )


def series_rows(series: dict[str, Any], unit: RateUnit = IMAGES) -> list[tuple[str, ...]]:
    """The projection at each count as the table shows it (`projection_columns`), its rate in `unit`."""
    return [
        (
            str(point["devices"]),
            str(point["nodes"]),
            _shown(point["step_seconds"], "{:.1f}", 1e3),
            _shown(point["samples_per_sec"], "{:.0f}", unit.per_sample),
            _shown(point["efficiency"], "{:.1%}"),
            _shown(point["unfitted_efficiency"], "{:.1%}"),
            _duration(point["epoch_seconds"]),
            point["limiter"],
        )
        for point in series["projection"]
    ]


def series_notes(series: dict[str, Any], unit: RateUnit = IMAGES) -> list[str]:
    """What the series was projected from (its input's rate in `unit`), how the calibration went,
    and where it stops scaling."""
    inputs = series["inputs"]
    rate = inputs["input"]
    notes = [
        f"one-GPU step {_shown(inputs['one_device_step_seconds'], '{:.1f}', 1e3)} ms "
        f"({inputs['one_device_step_source']}), "
        f"gradients {inputs['gradient_bytes'] / 1e6:.3g} MB in {inputs['tensors']} tensors, exchanged as "
        f"{inputs['exchange']['text']}, which can hide behind "
        f"{inputs['overlap_share']:.0%} of the compute ({inputs['overlap_source']}), "
        + InputRate(rate["kind"], rate["samples_per_sec_per_node"]).text(unit),
        f"host: the one-GPU step less its compute ({inputs['compute_source']}) and the loaders' wait where they "
        f"limit, {inputs['host_seconds'] * 1e3:.2f} ms, done by {inputs['dispatch']['text']}",
    ]
    notes += [
        f"calibration: {check['devices']} GPUs measured {_shown(check['measured_efficiency'], '{:.1%}')}, the "
        f"model before calibration {_shown(check['unfitted_efficiency'], '{:.1%}')} "
        f"({_shown(check['residual_points'], '{:+.1f}')} points)"
        for check in series["calibration"]
    ]
    if series["calibration"]:
        notes.append(f"fitted overhead per multi-GPU step: {_shown(series['overhead_seconds'], '{:.2f}', 1e3)} ms")
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
