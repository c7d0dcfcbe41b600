"""The compare table: throughput, speedup and efficiency per framework/strategy/device count,
and what holds each run back (its breakdown's bottleneck, in one line).

Speedup is throughput at N devices over throughput at the smallest device count of the same
framework, strategy and job (normally 1); efficiency is speedup over the device ratio. Both are
read from the rows, which hold them as the results file's writer finished them
(`mgbench.records.scaling`); rows that hold none (a folder written before they were kept, a row
not yet written) get them by the same definition, so a partial results file still tabulates.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from rich.console import Console

from mgbench.core.inputs import IMAGES, RateUnit
from mgbench.measure.breakdown import CATEGORIES
from mgbench.measure.timing import FIRST_STEP_KEPT, first_step_kept
from mgbench.records.results import RunResult, figure_types
from mgbench.records.runfolder import RunFolder
from mgbench.records.scaling import scaled
from mgbench.records.utilisation import SOURCES
from mgbench.reports.caveats import frame_caveats
from mgbench.reports.cells import MISSING, figure_text, number
from mgbench.reports.columns import Col
from mgbench.reports.ranking import NOT_REACHED, split_metric
from mgbench.reports.readings import footnote_mark, held_back_cells, reading
from mgbench.reports.same_start import same_start_sentence
from mgbench.reports.spread import Spread, row_interval
from mgbench.reports.units import MFU, frame_unit, language_model, model_sentences

GROUP = ["framework", "strategy"]
PIPED_WIDTH = 200
"""The console's width when output is piped and `COLUMNS` does not say one."""

TABLE_COLUMNS = {
    "framework": "framework",
    "strategy": "strategy",
    "devices": "devices",
    "device_kind": "kind",
    "status": "status",
    "samples_per_sec": IMAGES.heading,
    "interval": "range",
    "rounds": "rounds",
    "spread": "p10-p90",
    "per_device": "per device",
    "mfu": MFU,
    "speedup": "speedup",
    "efficiency": "efficiency",
    "utilisation": "GPU util % (p10-p90)",
    "device_utilisation": "GPU util % per device",
    "memory_used_gib": "GPU mem used GiB",
    "warmup": "warm-up",
    "stalls": "stalls",
    "input_wait_pct": "input wait %",
    "startup_seconds": "start-up s",
    "compile_seconds": "compile s",
    "attention_kernel": "attention",
    "time_to_train_seconds": "train s",
    "epoch_samples_per_sec": f"epoch {IMAGES.label} (all in)",
    "time_to_target_seconds": "to target s",
    "target_epoch": "target epoch",
    "test_auc": "test AUC",
    "test_top1": "test top1",
    "peak_memory_gib": "peak mem GiB",
    "peak_memory_reserved_gib": "reserved mem GiB",
    "largest_batch": "max batch per GPU (est.)",
    "allreduce_pct": "all-reduce % (expected)",
    "reading": "what holds it back",
    "warning": "warning",
}
HOST_HEADERS = {"utilisation": "host CPU util % (p10-p90)", "memory_used_gib": "host mem used GiB"}
"""The utilisation columns' headers where CPU devices stood in: the figures are the host's own."""
SCALING_COLUMNS = ("speedup", "efficiency")
NAMING_COLUMNS = ("framework", "strategy", "devices", "status")
"""Columns every table keeps; any other is left out where it is empty (or a dash) in every row:
the epoch columns where no row trained in epochs, the attention kernel where no model has it,
the expected all-reduce where no bandwidth was measured, ..."""
SUPERLINEAR_TOLERANCE = 1.05
"""A speed-up above the device ratio by more than this factor is not scaling: the runs were not
measured under the same conditions (a busy machine during one of them)."""
WIDE_SPREAD = 0.25
"""A p10-p90 range wider than this share of the steady rate: the steady state was not steady."""
INSIDE_TOLERANCE = 1e-9
"""Rounding between the steady rate and the p10/p90 of the same steps."""
OUTSIDE_P10 = "steady rate below its steps' p10: a few slow steps, too frequent or too short to be stalls, weigh on it"
OUTSIDE_P90 = "steady rate above its steps' p90: most steps were slower than the few fast ones that carry it"
"""Why a row's steady rate (a mean over its window, weighted by time) lies outside the p10-p90 of
its single steps."""
LIST_COLUMNS = (
    "step_seconds",
    "input_wait_seconds",
    "losses",
    "environment",
    "profile",
    "breakdown",
    "caveats",
    "device_utilisation",
)
NUMBER_FIGURES = [name for name, hint in figure_types().items() if hint in (float | None, int | None)]
"""The figures a row holds as a number or null (no value: the row's `warnings` say why). The
frame holds them as floats, a null as NaN, whether one row lacks the figure or every row does
(pandas leaves a column of nulls only as None), so report code meets one kind of gap."""


def results_frame(results: list[RunResult]) -> pd.DataFrame:
    """One row per run with its scaling figures (as the rows hold them: `scaling.scaled`), and the
    profile's and breakdown's shares as columns of their own (`profile_communication_fraction`,
    `breakdown_idle_fraction`, ...)."""
    # The scaling figures as they are: a speed-up past a float's range (1e10 img/s over 1e-300) is
    # infinite here, as every report reads it (superlinear), where the file holds it as null.
    rows = zip(results, scaled(results), strict=True)
    frame = pd.DataFrame([{**result.to_record(), **asdict(row.scaling)} for result, row in rows])
    if frame.empty:
        return frame
    frame[NUMBER_FIGURES] = frame[NUMBER_FIGURES].astype(float)
    frame[Col.CAVEATS] = frame_caveats(frame)
    frame[Col.WARNING] = ["; ".join(row_warnings(row)) for _, row in frame.iterrows()]
    for column, keys in (("profile", ("communication_share", "input_copy_share")), ("breakdown", CATEGORIES)):
        if column in frame:
            for key in keys:
                name = f"{column}_{key.removesuffix('_share')}_fraction"
                frame[name] = [v.get(key) if isinstance(v, dict) else None for v in frame[column]]
    return frame


def superlinear(efficiency: float) -> bool:
    """Whether a scaling efficiency (a fraction) is past what scaling gives (`SUPERLINEAR_TOLERANCE`):
    the runs it compares were not measured alike, so no report states it as a result."""
    return efficiency > SUPERLINEAR_TOLERANCE


def row_warnings(row: pd.Series) -> list[str]:
    """Why a row's figures should not be trusted as they stand, one sentence each (none when
    nothing stands out)."""
    if row[Col.STATUS] != "ok":
        return []
    warnings = list(row.get(Col.WARNINGS) or [])  # the row's own: figures it wrote as null, and why
    if superlinear(row[Col.SCALING_EFFICIENCY_FRACTION]):
        warnings.append(
            f"speed-up {row[Col.SPEEDUP]:.2f}x exceeds the device ratio: the runs were not measured alike (machine busy?)"
        )
    if first_step_kept(row[Col.WARMUP_STEPS], row[Col.WARMUP_DETECTED]):
        warnings.append(FIRST_STEP_KEPT)
    spread = (row[Col.SAMPLES_PER_SEC_P90] - row[Col.SAMPLES_PER_SEC_P10]) / row[Col.SAMPLES_PER_SEC]
    if spread > WIDE_SPREAD:
        warnings.append(f"p10-p90 spans {spread:.0%} of the steady rate: unsteady steps")
    p10, p90 = number(row[Col.SAMPLES_PER_SEC_P10]), number(row[Col.SAMPLES_PER_SEC_P90])
    if p10 is not None and row[Col.SAMPLES_PER_SEC] < p10 * (1 - INSIDE_TOLERANCE):
        warnings.append(OUTSIDE_P10)
    if p90 is not None and row[Col.SAMPLES_PER_SEC] > p90 * (1 + INSIDE_TOLERANCE):
        warnings.append(OUTSIDE_P90)
    versions = row.get(Col.FRAMEWORK_VERSIONS)
    cudnn = versions.get("cudnn", "") if isinstance(versions, dict) else ""
    if cudnn.startswith("not used"):
        warnings.append(f"cuDNN {cudnn}: convolutions ran without it, unlike the other frameworks' GPU rows")
    warnings += [caveat.text for caveat in row.get(Col.CAVEATS) or []]
    return warnings


def rate_spread(row: pd.Series) -> Spread:
    """The row's steady rate with its interval (`spread`): every round's thirds, never under the noise floor."""
    rounds = number(row.get(Col.ROUNDS))
    return Spread.of(float(row[Col.SAMPLES_PER_SEC]), *row_interval(row, "samples_per_sec"), int(rounds or 1))


def _stalls(row: pd.Series) -> str:
    """`1 / 2.8 s`: the steps that stalled after warm-up and their seconds (`MISSING` in a row from
    before stalls were counted)."""
    steps = number(row.get(Col.STALL_STEPS))
    return MISSING if steps is None else f"{steps:.0f} / {figure_text(row[Col.STALL_SECONDS], '{:.1f} s')}"


def _spread(row: pd.Series, unit: RateUnit) -> str:
    """`p10-p90` of the steps' rates in `unit`, `MISSING` where either end has no value."""
    low, high = number(row[Col.SAMPLES_PER_SEC_P10]), number(row[Col.SAMPLES_PER_SEC_P90])
    return MISSING if low is None or high is None else f"{unit.of(low):.0f}-{unit.of(high):.0f}"


def _utilisation(row: pd.Series) -> str:
    """`97 (95-99)`: the median utilisation over the steady window and its p10-p90."""
    median = number(row.get(Col.UTILISATION_PCT))
    low, high = number(row.get(Col.UTILISATION_P10_PCT)), number(row.get(Col.UTILISATION_P90_PCT))
    if median is None:
        return MISSING
    return f"{median:.0f}" + (f" ({low:.0f}-{high:.0f})" if low is not None and high is not None else "")


def _per_device(devices: object) -> str:
    """`98, 97, 41, 96`: each GPU's median utilisation, where a row has more than one ("" else)."""
    if not isinstance(devices, list) or len(devices) < 2:
        return ""
    return ", ".join(figure_text(device.get("utilisation_pct"), "{:.0f}") for device in devices)


def measured_host(frame: pd.DataFrame) -> bool:
    """Whether the rows' utilisation is the host's own (CPU devices stood in for GPUs)."""
    sources = frame[Col.UTILISATION_SOURCE].dropna() if Col.UTILISATION_SOURCE in frame else []
    return len(sources) > 0 and all(source == SOURCES["cpu"] for source in sources)


def table_headers(frame: pd.DataFrame) -> dict[str, str]:
    """Each table column's header: `TABLE_COLUMNS`, the rate's in its model's unit
    (`units.frame_unit`), the utilisation's named as the host's where CPU devices stood in."""
    unit = frame_unit(frame)
    device = "device" if measured_host(frame) else "GPU"
    rates = {
        "samples_per_sec": unit.heading,
        "per_device": f"{unit.label} per {device}",
        "epoch_samples_per_sec": f"epoch {unit.label} (all in)",
    }
    return {**TABLE_COLUMNS, **rates, **(HOST_HEADERS if measured_host(frame) else {})}


def _language_model_cells(r: pd.Series, unit: RateUnit) -> dict[str, str]:
    """What a language model's finished row adds (`units`): its rate per device and its MFU."""
    per_device = number(r.get(Col.SAMPLES_PER_SEC_PER_DEVICE))
    return {
        "per_device": figure_text(None if per_device is None else unit.of(per_device), "{:,.0f}"),
        "mfu": figure_text(r.get(Col.PEAK_FRACTION), "{:.0%}"),
    }


def _ok_cells(r: pd.Series, unit: RateUnit) -> dict[str, str]:
    """The figures only a finished row has, formatted (`MISSING` where one has no value), its
    rates in `unit`."""
    peak, used = number(r[Col.PEAK_MEMORY_BYTES]), number(r.get(Col.MEMORY_USED_MIB))
    reserved = number(r.get(Col.PEAK_MEMORY_RESERVED_BYTES))
    rate = rate_spread(r).times(unit.per_sample)
    return {
        "samples_per_sec": rate.text(),
        "interval": rate.range_text,
        "rounds": f"{rate.rounds}",
        "spread": _spread(r, unit),
        "speedup": figure_text(r[Col.SPEEDUP], "{:.2f}x"),
        "efficiency": figure_text(r[Col.SCALING_EFFICIENCY_FRACTION], "{:.0%}"),
        "warmup": f"{figure_text(r[Col.WARMUP_STEPS], '{:.0f} st')} / {figure_text(r[Col.WARMUP_SECONDS], '{:.1f} s')}",
        "stalls": _stalls(r),
        "input_wait_pct": figure_text(r[Col.INPUT_WAIT_FRACTION] * 100, "{:.1f}"),
        "startup_seconds": figure_text(r[Col.STARTUP_SECONDS], "{:.1f}"),
        "compile_seconds": figure_text(r[Col.COMPILE_SECONDS], "{:.1f}"),
        **({"attention_kernel": r[Col.ATTENTION_KERNEL]} if isinstance(r.get(Col.ATTENTION_KERNEL), str) else {}),
        "peak_memory_gib": figure_text(peak / 2**30 if peak else None, "{:.2f}"),
        "peak_memory_reserved_gib": figure_text(reserved / 2**30 if reserved else None, "{:.2f}"),
        "largest_batch": figure_text(r.get(Col.LARGEST_BATCH_ESTIMATE), "{:.0f}"),
        "utilisation": _utilisation(r),
        "device_utilisation": _per_device(r.get(Col.DEVICE_UTILISATION)),
        "memory_used_gib": figure_text(used / 1024 if used is not None else None, "{:.1f}"),
        "allreduce_pct": figure_text(r[Col.ALLREDUCE_STEP_FRACTION] * 100, "{:.1f}"),
    }


def _time_text(r: pd.Series, key: str) -> str:
    """A time to train (or to the target) to the digits its rounds support (`MISSING` without one)."""
    seconds = number(r.get(key))
    return MISSING if seconds is None else Spread.of(seconds, *row_interval(r, key)).text()


def _epoch_cells(r: pd.Series, unit: RateUnit) -> dict[str, str]:
    """What a row trained in epochs answers: its time to train (to `--target-metric`, and the
    epoch that reached it), its epoch rate in `unit` and the test split's metrics; nothing for a
    `--steps` row."""
    if pd.isna(r.get(Col.EPOCHS)):
        return {}
    epoch_rate = number(r.get(Col.EPOCH_SAMPLES_PER_SEC))
    cells = {
        "time_to_train_seconds": _time_text(r, "time_to_train_seconds"),
        "epoch_samples_per_sec": figure_text(None if epoch_rate is None else unit.of(epoch_rate), "{:,.1f}"),
    }
    if isinstance(r.get(Col.TARGET_METRIC), str):
        reached = number(r[Col.TARGET_EPOCH]) is not None
        cells["time_to_target_seconds"] = _time_text(r, "time_to_target_seconds") if reached else NOT_REACHED
        cells["target_epoch"] = figure_text(r[Col.TARGET_EPOCH], "{:.0f}") if reached else ""
    tests = r.get(Col.TEST_METRICS)
    for name in ("auc", "top1"):
        if isinstance(tests, dict) and name in tests:
            cells[f"test_{name}"] = figure_text(split_metric(tests, name), "{:.3f}")
    return cells


def display_table(frame: pd.DataFrame) -> pd.DataFrame:
    """The human table: formatted strings, `MISSING` for a figure an ok row has no value for,
    failures showing their status and first error line (and no figures); without speed-up and
    efficiency where every row ran on one device count (they would all read 1), and without any
    other column empty in every row (`NAMING_COLUMNS`). Rates are in the model's unit
    (`units.frame_unit`); a language model's rows add their rate per device and their MFU."""
    unit, language = frame_unit(frame), language_model(frame) is not None
    rows = []
    for _, r in frame.iterrows():
        ok = r[Col.STATUS] == "ok"
        status = (
            r[Col.STATUS]
            if ok
            else f"{r[Col.STATUS]}: {str(r[Col.ERROR] or '').splitlines()[0] if r[Col.ERROR] else ''}"
        )
        rows.append(
            {
                "framework": r[Col.FRAMEWORK],
                "strategy": r[Col.STRATEGY],
                "devices": str(r[Col.DEVICES]),
                "device_kind": r[Col.DEVICE_KIND],
                "status": status,
                **(_ok_cells(r, unit) | _epoch_cells(r, unit) if ok else {}),
                **(_language_model_cells(r, unit) if ok and language else {}),
                "reading": reading(r),
                "warning": r[Col.WARNING],
            }
        )
    table = pd.DataFrame(rows, columns=list(TABLE_COLUMNS), dtype=object).fillna("")
    empty = [c for c in table if c not in NAMING_COLUMNS and table[c].isin(["", MISSING]).all()]
    if frame[Col.DEVICES].nunique() == 1:
        empty += SCALING_COLUMNS
    return table.drop(columns=[c for c in dict.fromkeys(empty) if c in table]).rename(columns=table_headers(frame))


def per_gpu_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """Each GPU's utilisation figures as columns of their own (`utilisation_pct_gpu0`,
    `memory_used_mib_gpu0`, ...), empty where a row has no such GPU; the host's one figure on CPU
    devices is the row's own."""
    cells: list[dict[str, float]] = []
    for devices in frame.get(Col.DEVICE_UTILISATION, pd.Series([[]] * len(frame), index=frame.index)):
        row = {}
        for device in devices if isinstance(devices, list) else []:
            name = str(device.get("device", ""))
            if name.startswith("GPU "):
                slug = "gpu" + name.removeprefix("GPU ")
                for figure in ("utilisation_pct", "utilisation_p10_pct", "utilisation_p90_pct", "memory_used_mib"):
                    row[f"{figure}_{slug}"] = device.get(figure)
        cells.append(row)
    return pd.DataFrame(cells, index=frame.index)


def csv_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """What `summary.csv` holds: every column but the per-step series, each GPU's utilisation as
    columns of their own (`per_gpu_columns`), other nested values as JSON, and no column that is
    empty in every row (`results.jsonl` keeps everything)."""
    table = frame.drop(columns=[c for c in LIST_COLUMNS if c in frame]).join(per_gpu_columns(frame))
    table = table.drop(columns=[c for c in table.columns if table[c].map(_is_empty).all()])
    for column in table.columns:
        if table[column].map(lambda v: isinstance(v, dict | list)).any():
            table[column] = table[column].map(lambda v: json.dumps(v) if isinstance(v, dict | list) else v)
    return table


def _is_empty(value: object) -> bool:
    return value is None or value == "" or value == [] or value == {} or (isinstance(value, float) and np.isnan(value))


def markdown_summary(frame: pd.DataFrame) -> str:
    """What `summary.md` holds: the human table (`display_table`), what holds each run back a short
    label with its footnote's mark (`held_back_cells`), the footnotes under the table, each said
    once, the same-start sentence and, for a language model, what its MFU counts and what its
    largest batch stands on (`units.model_sentences`)."""
    table = display_table(frame)
    header = TABLE_COLUMNS["reading"]
    cells, footnotes = held_back_cells(frame)
    said = ""
    if header in table:
        table[header] = cells
        said = "".join(f"- ({footnote_mark(index)}) {text}\n" for index, text in enumerate(footnotes))
    sentences = "".join(
        f"\n{sentence}\n" for sentence in (same_start_sentence(frame), model_sentences(frame)) if sentence
    )
    return table.to_markdown(index=False) + "\n" + (f"\n{said}" if said else "") + sentences


def write_summary(folder: Path, results: list[RunResult]) -> pd.DataFrame:
    """`summary.csv` (numbers, one row per run: `csv_frame`) and `summary.md` (`markdown_summary`)."""
    frame = results_frame(results)
    files = RunFolder(folder)
    files.write(files.summary_csv, csv_frame(frame).to_csv(index=False))
    files.write(files.summary_md, markdown_summary(frame))
    return frame


def terminal_columns() -> int | None:
    """`COLUMNS` where it says a width (a positive whole number), else None: `0`, `-1` or `abc`
    say none, and are read as if unset."""
    text = os.environ.get("COLUMNS", "")
    return int(text) if text.isdigit() and int(text) > 0 else None


def sized_console(**options: Any) -> Console:
    """A rich console (`options` as rich's) whose width a `COLUMNS` saying none does not decide:
    rich takes `COLUMNS=0` for a width of 0 and prints nothing at all, so such a value is left out
    of what it reads, and the terminal's width (or rich's 80 off a terminal) holds."""
    if terminal_columns() is None and "COLUMNS" in os.environ:
        options["_environ"] = {name: value for name, value in os.environ.items() if name != "COLUMNS"}
    return Console(**options)


def table_console() -> Console:
    """A console for wide tables: the terminal's width, or when output is piped/logged `COLUMNS`
    where it says one (a script or CI log that says how wide it is, which rich reads), else 200
    columns (rich would otherwise fold every column of a logged table into an unreadable 80).
    Sentences (notes, the verdict) are word-wrapped to a terminal's width and printed whole, one
    line each, elsewhere (`compact.say`)."""
    console = sized_console()
    return console if console.is_terminal or terminal_columns() else sized_console(width=PIPED_WIDTH)
