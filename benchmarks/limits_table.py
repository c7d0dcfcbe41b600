"""The limits table of run folders: how close each row is to its device, and what holds it back.

    python3 benchmarks/limits_table.py RUN_DIR... [--csv FILE]

One line per ok row: images/sec, achieved TFLOP/s, its share of the measured matmul peak (and
of the vendor's), the device-busy ceiling and what host, input and communication take from it,
the bound with its note, how the steps were timed, kernels per step, peak and activation memory.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from mgbench.measure.breakdown import BOUND_LABELS
from mgbench.records.results import RESULTS_FILE, read_results


def peak_fraction(tflops: float | None, peak: float | None, devices: int) -> float | None:
    """The row's TFLOP/s over one device's `peak` x devices (a row's `peak_fraction` is against one
    peak only, the measured or else the vendor's: this table shows both)."""
    return tflops / (peak * devices) if tflops is not None and peak else None


def rows(folder: Path) -> list[dict]:
    table = []
    for result in read_results(folder / RESULTS_FILE):
        if result.status != "ok":
            table.append({"folder": folder.name, "row": result.run_id, "status": result.status})
            continue
        config = result.config
        measured = (
            result.limit.peak_tflops if result.limit.peak_source and "measured" in result.limit.peak_source else None
        )
        taken = result.profiled.ceiling_taken or {}
        kernels = (result.profiled.profile or {}).get("kernels_per_step")
        table.append(
            {
                "folder": folder.name,
                "row": result.run_id,
                "compile": config.job.compile or "",
                "img/s": round(result.timing.samples_per_sec, 1),
                "TFLOP/s": None if result.limit.achieved_tflops is None else round(result.limit.achieved_tflops, 1),
                "% matmul peak": peak_fraction(result.limit.achieved_tflops, measured, config.devices),
                "% vendor peak": peak_fraction(
                    result.limit.achieved_tflops, result.limit.vendor_peak_tflops, config.devices
                ),
                "ceiling img/s": result.profiled.device_ceiling_samples_per_sec,
                "host takes": taken.get("host"),
                "input takes": taken.get("input"),
                "comm takes": taken.get("communication"),
                "uneven takes": taken.get("uneven_steps"),
                "bound": BOUND_LABELS.get(result.profiled.bottleneck or "", ""),
                "note": result.profiled.bottleneck_note or "",
                "compute %": None if not result.profiled.breakdown else 100 * result.profiled.breakdown["compute"],
                "timing": result.timing_method,
                "kernels/step": kernels,
                "peak GiB": None if not result.peak_memory_bytes else result.peak_memory_bytes / 2**30,
                "activations GiB (est.)": None
                if not result.limit.activation_bytes_estimate
                else result.limit.activation_bytes_estimate / 2**30,
            }
        )
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--csv", type=Path, default=None)
    args = parser.parse_args()
    frame = pd.DataFrame([row for folder in args.folders for row in rows(folder)])
    for column in ("% matmul peak", "% vendor peak"):
        if column in frame:
            frame[column] = frame[column] * 100
    with pd.option_context("display.width", 250, "display.max_columns", None, "display.float_format", "{:.1f}".format):
        print(frame.to_string(index=False))
    if args.csv:
        frame.to_csv(args.csv, index=False)


if __name__ == "__main__":
    main()
