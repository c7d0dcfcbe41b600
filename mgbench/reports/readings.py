"""What holds a run back, in one line: its bottleneck's share and what that share means.

The categories are `mgbench.common.breakdown.CATEGORIES`; their labels and colours here are
shared by the summary table and every chart that shows them.
"""

from __future__ import annotations

import pandas as pd

from mgbench.common.breakdown import CATEGORIES

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
        if row.get("breakdown_clock") == "cpu":
            return f"{LABELS[name]} {breakdown[name]:.0%} (CPU trace): {CPU_READINGS[name]}"
        return f"{LABELS[name]} {breakdown[name]:.0%}: {READINGS[name]}"
    profile = row.get("profile")
    if isinstance(profile, dict) and (profile.get("error") or profile.get("breakdown_error")):
        return f"no breakdown: {profile.get('error') or profile.get('breakdown_error')}"
    return NOT_PROFILED if row["device_kind"] == "cuda" else ""


def breakdown_text(breakdown: object) -> str:
    """`input wait 2%, host-to-device 0%, compute 61%, ...` ("" without a breakdown)."""
    if not has_breakdown(breakdown):
        return ""
    return ", ".join(f"{LABELS[name]} {breakdown[name]:.0%}" for name in CATEGORIES)
