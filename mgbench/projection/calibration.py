"""A run folder's rows projected past the machine they ran on (the step `model`),
calibrated on the folder's own multi-device rows, into `projection.json`.

Rows form series: one framework, strategy, model, precision and batch per device at several
device counts. A series' inputs:

- the one-device step: the batch over the per-device rate of its smallest row (images/sec over
  devices), less the exchange the model puts in that row where it ran on several devices;
- its compute: the smallest row's compute share of its breakdown, or the step less its input
  wait where it was not profiled;
- the overlap window: measured where a multi-device row of the series was profiled (the compute
  from the first collective kernel to the start of the last, over the step's compute, from its
  rank files), else `ASSUMED_OVERLAP`;
- the model's bytes: the row's trainable parameters (counted by the framework in the run, or the
  registry's import-free count) x 4 bytes (fp32 parameters and gradients);
- the collectives: what the row's strategy shards and runs each step, as the registry declares
  it (`StrategySpec.communication`); a series whose strategy declares none, or is not in the
  registry, is not projected, and the projection's `not_projected` says why;
- the exchange: how the row's strategy issues them, as the registry declares it (DDP's buckets
  where it declares none), with the registry's count of the model's trainable tensors;
- the host: the smallest row's step less its exposed exchange, its compute and, where the
  loaders were the limit, its input wait (which the input cap carries): what its device waited
  for its host; split over its devices where one process drove several; and which process does
  it, as the registry declares it (a process per device where it declares none);
- the input per node: a real-data row's images/sec where its input wait shows the loaders were
  the limit, a lower bound where they kept up, not measured on synthetic data.

Calibration: the model (with the links of the machine the rows ran on: the folder's
`bandwidth.json`, else the target's links within a node) predicts each multi-device row of the
series from its smallest; what it leaves unexplained becomes a fitted per-step overhead
(`model.fitted_overhead`), and the residual of the unfitted prediction is reported.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd

from mgbench.core.collectives import UNDECLARED, Communication
from mgbench.core.errors import UsageError
from mgbench.core.inputs import IMAGES, RateUnit
from mgbench.core.models import MODELS
from mgbench.core.safe_files import read_regular
from mgbench.core.units import rate_unit
from mgbench.frameworks.exchange import DDP_EXCHANGE, PROCESS_PER_DEVICE, Dispatch, Exchange
from mgbench.frameworks.registry import framework_spec
from mgbench.measure.breakdown import COMMUNICATION, COMPUTE, OTHER_COPY, has_breakdown, intersect, length, union
from mgbench.measure.metrics import defined
from mgbench.projection.interconnects import measured_link
from mgbench.projection.model import (
    EFFICIENCY_FLOOR,
    CountProjection,
    Interconnect,
    Link,
    StepModel,
    first_below_floor,
    fitted_overhead,
    scan_counts,
)
from mgbench.records.bandwidth import GB, GRADIENT_BYTES_PER_PARAM
from mgbench.records.breakdown_record import RANK_BREAKDOWN_FILE, READ_ERRORS
from mgbench.records.results import current_names, write_json_atomically
from mgbench.records.runfolder import RunFolder

PROJECTION_FILE = "projection.json"
WRITTEN_BY = "mgbench project"
"""Marks a projection.json as this tool's, so that rewriting it never replaces someone else's file."""
SERIES = ["framework", "strategy", "model", "precision", "batch_per_device"]
ASSUMED_OVERLAP = 2 / 3
"""Where no multi-device row was profiled: the backward pass, over which gradients can be
exchanged, is two thirds of the compute (it does about twice the forward's arithmetic)."""
INPUT_BOUND_WAIT = 0.05
"""A real-data row that waits for input this share of its step ran at its loaders' rate."""
IMAGENET_TRAIN_IMAGES = 1_281_167
SCAN_UP_TO = 1024


@dataclass(frozen=True)
class InputRate:
    kind: str
    """`limit` (the loaders set the pace), `lower bound` (they kept up) or `not measured`."""
    samples_per_sec_per_node: float | None = None

    def text(self, unit: RateUnit = IMAGES) -> str:
        """`input limit 1500 img/s per node`: the rate in `unit`, the model's (`core.units`)."""
        if self.samples_per_sec_per_node is None:
            return "input not measured (synthetic data)"
        return f"input {self.kind} {unit.of(self.samples_per_sec_per_node):.0f} {unit.label} per node"


def overlap_share(record: dict[str, Any]) -> float | None:
    """From one rank's breakdown file: per device and step, the compute between the first
    collective kernel's start and the last one's (the backward the exchange runs beside) over the
    step's compute; their mean, or None where no step had a collective."""
    shares = []
    for device in record.get("devices", {}).values():
        for start, end in record.get("step_spans", []):
            inside = [(s, e, kind) for s, e, kind in device["intervals"] if s >= start and e <= end]
            collectives = sorted(s for s, _, kind in inside if kind == COMMUNICATION)
            compute = union((s, e) for s, e, kind in inside if kind in (COMPUTE, OTHER_COPY))
            if collectives and length(compute) > 0:
                window = intersect(compute, [(collectives[0], collectives[-1])])
                shares.append(length(window) / length(compute))
    return sum(shares) / len(shares) if shares else None


def measured_overlap(root: Path, run_id: str) -> float | None:
    """The mean `overlap_share` over a profiled run's rank files (None: none readable with collectives)."""
    shares = []
    for path in sorted(RunFolder(root).profile_dir(run_id).glob(RANK_BREAKDOWN_FILE.format("*"))):
        try:
            share = overlap_share(json.loads(read_regular(path)))
        except READ_ERRORS:
            continue
        if share is not None:
            shares.append(share)
    return sum(shares) / len(shares) if shares else None


def trainable_parameters(row: pd.Series) -> int:
    """Counted by the framework in the run, else the registry's count for that framework's build."""
    if isinstance(row.get("parameters"), int | float) and row["parameters"] > 0:
        return int(row["parameters"])
    try:
        return framework_spec(row["framework"]).capabilities.expected_parameters(row["model"])
    except UsageError:
        return MODELS[row["model"]].reference_parameters


def trainable_tensors(row: pd.Series) -> int:
    """The registry's count for that framework's build of the row's model."""
    try:
        return framework_spec(row["framework"]).capabilities.expected_tensors(row["model"])
    except UsageError:
        return MODELS[row["model"]].reference_tensors


def strategy_communication(row: pd.Series) -> Communication | str:
    """What the row's strategy declares it shards and communicates, or why there is nothing to price."""
    try:
        declared = framework_spec(row["framework"]).strategy(row["strategy"]).communication
    except UsageError:
        return f"{row['framework']} {row['strategy']} is not a registered strategy here, so what it communicates is unknown"
    return declared or UNDECLARED


def strategy_exchange(row: pd.Series) -> tuple[Exchange, str]:
    """The exchange the row's strategy declares, and whether it declared one."""
    try:
        declared = framework_spec(row["framework"]).strategy(row["strategy"]).exchange
    except UsageError:
        declared = None
    return (declared, "declared by the strategy") if declared else (DDP_EXCHANGE, "not declared: DDP's assumed")


def step_shares(row: pd.Series) -> tuple[float, float, str]:
    """The row's compute and input-wait shares of its step, and where they come from: its
    breakdown, else its input wait with the rest of the step taken as compute."""
    if has_breakdown(row["breakdown"]):
        return row["breakdown"]["compute"], row["breakdown"]["input_wait"], "breakdown"
    wait = row["input_wait_fraction"] or 0.0
    return 1 - wait, wait, "step less input wait"


def strategy_dispatch(row: pd.Series) -> tuple[Dispatch, str]:
    """Which process the row's strategy declares does each device's host work, and whether it declared it."""
    try:
        declared = framework_spec(row["framework"]).strategy(row["strategy"]).dispatch
    except UsageError:
        declared = None
    if declared:
        return declared, "declared by the strategy"
    return PROCESS_PER_DEVICE, "not declared: a process per device assumed"


def input_rate(rows: pd.DataFrame) -> InputRate:
    real = rows[rows["dataset"] != "synthetic"]
    if real.empty:
        return InputRate("not measured")
    bound = real[real["input_wait_fraction"] >= INPUT_BOUND_WAIT]
    if not bound.empty:
        return InputRate("limit", float(bound["samples_per_sec"].max()))
    return InputRate("lower bound", float(real["samples_per_sec"].max()))


def here_interconnect(root: Path, target: Interconnect, devices: int) -> Interconnect:
    """The links the folder's rows ran on: its bandwidth.json, else the target's within a node."""
    path = RunFolder(root).bandwidth
    link = measured_link(path) if path.is_file() else target.within
    return Interconnect(link, None, gpus_per_node=max(devices, 1))


def _count_record(point: CountProjection, epoch_images: int, unfitted: CountProjection) -> dict[str, Any]:
    return {
        "devices": point.devices,
        "nodes": point.nodes,
        "step_seconds": point.step_seconds,
        "samples_per_sec": point.samples_per_sec,
        "efficiency": point.efficiency,
        "epoch_seconds": epoch_images / point.samples_per_sec,
        "allreduce_seconds": point.allreduce_seconds,
        "exposed_seconds": point.exposed_seconds,
        "host_seconds": point.host_seconds,
        "overhead_seconds": point.overhead_seconds,
        "limiter": point.limiter,
        "unfitted_efficiency": unfitted.efficiency,
    }


@dataclass(frozen=True)
class SeriesInputs:
    """What a series is projected from, and where each figure came from."""

    model: StepModel
    base: pd.Series
    parameters: int
    overlap_source: str
    compute_source: str
    exchange_source: str
    dispatch_source: str
    input: InputRate

    def efficiency(self, row: pd.Series) -> float:
        """A row's measured efficiency against the model's one-device step."""
        return (
            row["samples_per_sec"] / row["devices"] * self.model.one_device_step_seconds / self.model.images_per_device
        )

    def record(self) -> dict[str, Any]:
        model, base = self.model, self.base
        return {
            "parameters": self.parameters,
            "gradient_bytes": model.gradient_bytes,
            "one_device_step_seconds": model.one_device_step_seconds,
            "one_device_step_source": "measured" if base["devices"] == 1 else f"modelled from {base['run_id']}",
            "compute_seconds": model.compute_seconds,
            "compute_source": self.compute_source,
            "host_seconds": model.host_seconds,
            "dispatch": {
                "name": model.dispatch.name,
                "one_per_node": model.dispatch.one_per_node,
                "text": model.dispatch.describe(),
                "source": f"{self.dispatch_source}: {model.dispatch.source}",
            },
            "overlap_share": model.overlap_share,
            "overlap_source": self.overlap_source,
            "tensors": model.tensors,
            "communication": {
                "shards": model.communication.shards.value,
                "collectives": [
                    {
                        "kind": collective.kind.value,
                        "carries": collective.carries.value,
                        "phase": collective.phase.value,
                        "fraction": collective.fraction,
                    }
                    for collective in model.communication.collectives
                ],
                "text": model.communication.describe(),
                "source": f"declared by the strategy: {model.communication.source}",
            },
            "exchange": {
                "name": model.exchange.name,
                "bucket_bytes": model.exchange.bucket_bytes,
                "tensors_per_bucket": model.exchange.tensors_per_bucket,
                "overlapped": model.exchange.overlapped,
                "text": model.exchange.describe(),
                "source": f"{self.exchange_source}: {model.exchange.source}",
            },
            "input": {"kind": self.input.kind, "samples_per_sec_per_node": self.input.samples_per_sec_per_node},
        }


def series_inputs(root: Path, rows: pd.DataFrame, here: Interconnect, communication: Communication) -> SeriesInputs:
    """The model of a series' step from its smallest row (module doc); `rows` sorted by devices."""
    base = rows.iloc[0]
    batch = int(base["batch_per_device"])
    profiled = [
        (share, run_id)
        for run_id in rows[rows["devices"] > 1].sort_values("devices", ascending=False)["run_id"]
        if (share := measured_overlap(root, run_id)) is not None
    ]
    overlap, overlap_source = (
        (profiled[0][0], f"measured on {profiled[0][1]}") if profiled else (ASSUMED_OVERLAP, "assumed")
    )
    compute_share, wait_share, compute_source = step_shares(base)
    parameters = trainable_parameters(base)
    gradient_bytes = parameters * GRADIENT_BYTES_PER_PARAM
    exchange, exchange_source = strategy_exchange(base)
    dispatch, dispatch_source = strategy_dispatch(base)
    tensors = trainable_tensors(base)
    rate = input_rate(rows)
    devices = int(base["devices"])
    base_step = devices * batch / base["samples_per_sec"]
    exposed = StepModel(
        base_step,
        compute_share * base_step,
        overlap,
        gradient_bytes,
        batch,
        exchange,
        tensors,
        communication=communication,
    ).exposed_seconds(here, devices)
    if exposed >= base_step:
        raise UsageError(
            f"{base['run_id']}: the in-node links given cannot carry its exchange within its measured step; "
            "give the links it ran on (its run folder's bandwidth.json)"
        )
    step = base_step - exposed
    loaders = wait_share if rate.kind == "limit" else 0.0
    in_turn = dispatch.devices_in_turn(devices, 1)
    host = (1 - compute_share - loaders) * step / in_turn
    model = StepModel(
        step - (in_turn - 1) * host,
        compute_share * step,
        overlap,
        gradient_bytes,
        batch,
        exchange,
        tensors,
        input_samples_per_sec_per_node=rate.samples_per_sec_per_node if rate.kind == "limit" else None,
        host_seconds=host,
        dispatch=dispatch,
        communication=communication,
    )
    return SeriesInputs(model, base, parameters, overlap_source, compute_source, exchange_source, dispatch_source, rate)


def project_series(
    root: Path,
    rows: pd.DataFrame,
    target: Interconnect,
    counts: list[int],
    epoch_images: int,
    communication: Communication,
) -> dict[str, Any]:
    """One series' inputs, calibration and projection at `counts` (module doc), pricing the
    collectives its strategy declares (`communication`)."""
    rows = rows.sort_values("devices")
    here = here_interconnect(root, target, int(rows["devices"].max()))
    inputs = series_inputs(root, rows, here, communication)
    model = inputs.model
    measured = {int(row["devices"]): inputs.efficiency(row) for _, row in rows.iloc[1:].iterrows()}
    calibration = [
        {
            "devices": devices,
            "measured_efficiency": efficiency,
            "unfitted_efficiency": (predicted := model.at(here, devices).efficiency),
            "residual_points": (predicted - efficiency) * 100,
        }
        for devices, efficiency in measured.items()
    ]
    fitted = model.with_overhead(fitted_overhead(model, here, measured))
    scanned = target.reach(max([SCAN_UP_TO, *counts]))
    first = first_below_floor(fitted, target, scanned)
    curve = sorted({1, *counts, *scan_counts(target.gpus_per_node, scanned)})
    return {
        **series_key(rows),
        "runs": list(rows["run_id"]),
        "inputs": inputs.record(),
        "measured": [
            {
                "devices": int(row["devices"]),
                "samples_per_sec": row["samples_per_sec"],
                "efficiency": inputs.efficiency(row),
                "run_id": row["run_id"],
            }
            for _, row in rows.iterrows()
        ],
        "calibration": calibration,
        "overhead_seconds": fitted.overhead_seconds,
        "projection": [
            _count_record(fitted.at(target, count), epoch_images, model.at(target, count)) for count in counts
        ],
        "curve": [
            {
                "devices": count,
                "samples_per_sec": (point := fitted.at(target, count)).samples_per_sec,
                "efficiency": point.efficiency,
                "unfitted_efficiency": model.at(target, count).efficiency,
            }
            for count in curve
        ],
        "limits_first": first.limiter if first else "nothing",
        "below_floor_at": first.devices if first else None,
        "scanned_up_to": scanned,
    }


def series_key(rows: pd.DataFrame) -> dict[str, Any]:
    """What names a series: its framework, strategy, model, precision and batch per device."""
    base = rows.iloc[0]
    return {
        **{key: base[key] for key in SERIES if key != "batch_per_device"},
        "batch_per_device": int(base["batch_per_device"]),
    }


def interconnect_record(interconnect: Interconnect) -> dict[str, Any]:
    def link(value: Link | None) -> dict[str, Any] | None:
        if value is None:
            return None
        return {
            "name": value.name,
            "bus_gbps": value.bus_bytes_per_second / GB,
            "hop_seconds": value.hop_seconds,
            "rate": value.source,
        }

    return {
        "within": link(interconnect.within),
        "across": link(interconnect.across),
        "gpus_per_node": interconnect.gpus_per_node,
        "nics_per_node": interconnect.nics_per_node,
    }


def epoch_text(samples: int, unit: RateUnit = IMAGES) -> str:
    """An epoch of `samples` in the model's unit (`core.units`): `1,281,167 images`, or where a
    sample holds several of the unit (a language model's sequence) `1,000 samples of 1024 tokens
    (1,024,000 tokens)`."""
    if unit.per_sample == 1:
        return f"{samples:,} {unit.one}s"
    return f"{samples:,} samples of {unit.per_sample} {unit.one}s ({samples * unit.per_sample:,} {unit.one}s)"


def folder_unit(rows: pd.DataFrame) -> RateUnit:
    """The unit a folder's rows show their rate in: its first row's model at its sequence length
    (a folder trains one model)."""
    first = rows.iloc[0]
    return rate_unit(first.get("model"), first.get("seq_len"))


def assumptions(target: Interconnect, epoch_images: int, unit: RateUnit = IMAGES) -> str:
    """The projection's assumptions, on one line; the epoch in the model's `unit` (`epoch_text`)."""
    across = (
        f", across nodes {target.nics_per_node} x {target.across.name} ({target.across.bus_bytes_per_second / GB:g} GB/s)"
        if target.across
        else ""
    )
    return (
        f"weak scaling (batch per GPU fixed); fp32 parameters and gradients (4 B a parameter) moved by the "
        f"collectives each strategy declares, in buckets as it issues them (see each series), NCCL ring or tree "
        f"(the faster per all-reduce bucket), "
        f"within a node {target.within.name} ({target.within.bus_bytes_per_second / GB:g} GB/s){across}, "
        f"{target.gpus_per_node} GPUs a node; an exchange beside the backward hides behind the compute from the "
        f"first bucket (measured where a multi-device row was profiled, else {ASSUMED_OVERLAP:.0%} of it), but for "
        f"the last bucket, one after the backward not at all; a process driving several devices pays the "
        f"one-device step's host time (the step less its compute) once for each; "
        f"input per node as measured on real data, unlimited on synthetic; epoch of {epoch_text(epoch_images, unit)}; "
        f"efficiency floor {EFFICIENCY_FLOOR:.0%}"
    )


class FolderRows(Protocol):
    """A run folder's rows as the report reads them (`reports.folder_data.RunFolderData`)."""

    root: Path
    frame: pd.DataFrame


def overflowing_step(rows: pd.DataFrame) -> str | None:
    """Why a series' step is no number the model can take: its smallest row so slow (1e-320
    img/s) that its step's seconds pass a float's range; None where they do not. Said in the
    model's unit (`folder_unit`)."""
    base = rows.sort_values("devices").iloc[0]
    samples = int(base["devices"]) * int(base["batch_per_device"])
    if math.isfinite(samples / float(base["samples_per_sec"])):  # a Python float: no numpy warning past the range
        return None
    unit = folder_unit(rows)
    return (
        f"{base['run_id']} at {unit.of(float(base['samples_per_sec'])):.3g} {unit.label} takes longer for its "
        f"{epoch_text(samples, unit)} than a float holds"
    )


def project_folder(data: FolderRows, target: Interconnect, counts: list[int], epoch_images: int) -> dict[str, Any]:
    """Every series of the folder's ok rows, projected (module doc), but those it cannot price or
    whose step passes a float's range (`overflowing_step`), listed in `not_projected`; a figure
    that has no finite value (an epoch at 1e-300 img/s) is None."""
    root, frame = data.root, data.frame
    ok = frame[frame["status"] == "ok"]
    if ok.empty:
        raise UsageError(f"{root} has no ok row to project")
    for count in counts:
        target.nodes(count)
    series, not_projected = [], []
    for _, rows in ok.groupby(SERIES, sort=True):
        communication = strategy_communication(rows.iloc[0])
        reason = communication if isinstance(communication, str) else overflowing_step(rows)
        if reason is None and not isinstance(communication, str):
            # a figure past a float's range is inf here, null in the projection (`defined`)
            with np.errstate(over="ignore", invalid="ignore"):
                series.append(project_series(root, rows, target, counts, epoch_images, communication))
        else:
            not_projected.append({**series_key(rows), "runs": list(rows["run_id"]), "reason": reason})
    if not series:
        raise UsageError(f"{root} has no series to project: {'; '.join(not_projected_text(r) for r in not_projected)}")
    projection = {
        "written_by": WRITTEN_BY,
        "counts": counts,
        "interconnect": interconnect_record(target),
        "epoch_images": epoch_images,
        "assumptions": assumptions(target, epoch_images, folder_unit(ok)),
        "series": series,
        "not_projected": not_projected,
    }
    return defined(projection)[0]  # a figure past a float's range (an epoch at 1e-300 img/s) null: JSON has no Infinity


def not_projected_text(record: dict[str, Any]) -> str:
    """A series left out of the projection, and why, on one line."""
    return (
        f"{record['framework']} {record['strategy']} {record['model']} {record['precision']} "
        f"{record['batch_per_device']}/GPU not projected: {record['reason']}"
    )


def write_projection(root: Path, projection: dict[str, Any]) -> Path:
    """`projection.json`, atomically; a file of that name this tool did not write stays untouched."""
    path = RunFolder(root).inside(PROJECTION_FILE)
    if path.exists() and read_projection(root) is None:
        raise UsageError(f"{path} exists and was not written by {WRITTEN_BY}: move it away first")
    write_json_atomically(path, json.dumps(projection, indent=1))
    return path


def read_projection(root: Path) -> dict[str, Any] | None:
    """The folder's projection, or None when there is none or the file is not this tool's; one an
    earlier version wrote is read under the current names (`results.current_names`)."""
    path = RunFolder(root).inside(PROJECTION_FILE)
    try:
        projection = json.loads(read_regular(path))
    except (OSError, ValueError):
        return None
    return (
        current_names(projection)
        if isinstance(projection, dict) and projection.get("written_by") == WRITTEN_BY
        else None
    )
