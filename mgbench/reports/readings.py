"""What holds a run back, in one line: its bottleneck's share and what that share means.

The categories are `mgbench.common.breakdown.CATEGORIES`; their labels and colours here are
shared by the summary table and every chart that shows them. A CPU row without a breakdown
reads its host timing instead; `limits_details` words how close a row is to its device.
"""

from __future__ import annotations

import pandas as pd

from mgbench.common.breakdown import BOUND_LABELS, CATEGORIES

LABELS = {
    "input_wait": "input wait",
    "host_to_device": "host-to-device",
    "compute": "compute",
    "communication": "communication",
    "idle": "idle",
}
COLORS = {
    "input_wait": "tab:orange",
    "host_to_device": "tab:olive",
    "compute": "tab:blue",
    "communication": "tab:purple",
    "idle": "tab:gray",
}
READINGS = {
    "compute": "the devices run the model's kernels nearly all the step: compute-bound",
    "idle": "nothing runs on the device: the host cannot launch kernels fast enough (Python, launches, synchronisation)",
    "communication": "gradient exchange that compute does not hide",
    "input_wait": "the host waits for the next batch: the input pipeline cannot keep up",
    "host_to_device": "input copies to the device that compute does not hide",
}
CPU_READINGS = {
    **READINGS,
    "compute": "operators run nearly all the step: compute-bound",
    "idle": "no operator runs: Python, the framework's own overhead, or waiting for the other processes",
}
"""Rows split from a CPU trace (operators on host threads, no device timeline)."""
NOT_PROFILED = "no breakdown: not profiled (--profile 0, or an --epochs run)"


def has_breakdown(value: object) -> bool:
    return isinstance(value, dict) and set(CATEGORIES) <= set(value)


def reading(row: pd.Series) -> str:
    """`idle 58%: nothing runs on the device: ...` for a row with a breakdown; why there is none
    for an ok row that has none; nothing for failed rows or CPU rows that were not profiled."""
    if row["status"] != "ok":
        return ""
    breakdown, name = row.get("breakdown"), row.get("bottleneck")
    if has_breakdown(breakdown) and name in READINGS:
        note = row.get("bottleneck_note")
        also = f" ({note})" if isinstance(note, str) and note else ""
        if row.get("breakdown_clock") == "cpu":
            return f"{LABELS[name]} {breakdown[name]:.0%} (CPU trace): {CPU_READINGS[name]}{also}"
        return f"{LABELS[name]} {breakdown[name]:.0%}: {READINGS[name]}{also}"
    profile = row.get("profile")
    if isinstance(profile, dict) and (profile.get("error") or profile.get("breakdown_error")):
        return f"no breakdown: {profile.get('error') or profile.get('breakdown_error')}"
    if row["device_kind"] == "cuda":
        return NOT_PROFILED
    host = host_timing_text(row.get("host_breakdown"))
    return f"host timing: {host}" if host else ""


def host_timing_text(shares: object) -> str:
    """`input wait 3%, step 95%, synchronize 1%, loss read 1%` ("" without host timing)."""
    if not isinstance(shares, dict) or not shares:
        return ""
    return ", ".join(f"{name.replace('_', ' ')} {share:.0%}" for name, share in shares.items())


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not pd.isna(value) else None


def limits_details(row: pd.Series) -> list[tuple[str, str]]:
    """How close the row is to its device and what stands between, for the run's details: the
    work and its share of the peak, the device-busy ceiling and what takes from it, the bound,
    how the steps were timed, and the kernel and memory facts of a host-bound step."""
    details = []
    flops, tflops, share = (_number(row.get(name)) for name in ("flops_per_image", "achieved_tflops", "peak_share"))
    if flops is not None and tflops is not None:
        peak = _number(row.get("peak_tflops"))
        against = f", {share:.0%} of {peak:.0f} TFLOP/s ({row.get('peak_source')})" if share and peak else ""
        details.append(("work", f"{flops / 1e9:.1f} GFLOP per image, {tflops:.1f} TFLOP/s{against}"))
    ceiling, taken = _number(row.get("device_ceiling_images_per_sec")), row.get("ceiling_taken")
    if ceiling is not None and isinstance(taken, dict):
        parts = ", ".join(f"{name.replace('_', ' ')} {value:.0f}" for name, value in taken.items())
        details.append(("device-busy ceiling", f"{ceiling:.0f} img/s; taken from it (img/s): {parts}"))
    if isinstance(row.get("bottleneck"), str) and row["bottleneck"] in BOUND_LABELS:
        details.append(("bound", BOUND_LABELS[row["bottleneck"]]))
    if isinstance(row.get("timing_method"), str):
        details.append(("timing", row["timing_method"]))
    host = host_timing_text(row.get("host_breakdown"))
    if host:
        details.append(("host timing", host))
    profile = row.get("profile")
    kernels = profile.get("kernels_per_step") if isinstance(profile, dict) else None
    if isinstance(kernels, int | float):
        details.append(("kernels per step", f"{kernels:.0f}"))
    activations = _number(row.get("activation_bytes_estimate"))
    if activations is not None:
        details.append(("activation memory (estimate)", f"{activations / 2**30:.2f} GiB per device"))
    return details


def breakdown_text(breakdown: object) -> str:
    """`input wait 2%, host-to-device 0%, compute 61%, ...` ("" without a breakdown)."""
    if not has_breakdown(breakdown):
        return ""
    return ", ".join(f"{LABELS[name]} {breakdown[name]:.0%}" for name in CATEGORIES)
