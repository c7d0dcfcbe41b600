"""What holds a run back, in one line: its bottleneck's share and what that share means.

The categories are `mgbench.measure.breakdown.CATEGORIES`; their labels and colours here are
shared by the summary table and every chart that shows them. A row without a breakdown
reads its host timing instead (`mgbench.measure.timing.HOST_PHASES`), by the rule that named the
row's own `bottleneck` (`breakdown.host_bottleneck`), so folders written before rows held it read
alike; `limits_details` words how close a row is to its device.
"""

from __future__ import annotations

from dataclasses import dataclass
from string import ascii_lowercase
from typing import Any, TypeGuard

import pandas as pd

from mgbench.core.kinds import DeviceKind
from mgbench.measure.breakdown import BOUND_LABELS, CATEGORIES, has_breakdown, has_shares, host_bottleneck
from mgbench.measure.timing import HOST_PHASES
from mgbench.records.peak import MEASURED
from mgbench.reports.cells import figure_text, number
from mgbench.reports.columns import Col
from mgbench.reports.units import MFU, row_language_model, row_unit

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
HOST_LABELS = {
    "input_wait": "input wait",
    "step": "step call",
    "synchronize": "synchronisation",
    "loss_read": "loss read",
}
HOST_COLORS = {
    "input_wait": COLORS["input_wait"],
    "step": "tab:cyan",
    "synchronize": "tab:gray",
    "loss_read": "tab:pink",
}
"""The host-timing shares' colours on the step-time chart: input wait as the profile's, the rest apart."""
HOST_READINGS = {
    "input_wait": READINGS["input_wait"],
    "step": "the framework's step call takes nearly all of it: the step itself sets the pace (on CPU devices its "
    "operators and gradient exchange, compute-bound; on GPUs launching it and waiting while the device's queue is "
    "full: --profile splits it)",
    "synchronize": "the host waits for the devices after every step",
    "loss_read": "reading the loss after every step (and its all-reduce where the strategy averages it)",
}
"""Rows read from host timing: where the host's time went per step, no profile taken."""
NOT_PROFILED = "no breakdown: not profiled (--profile 0, or an --epochs run)"
DEVICE, CPU_TRACE, HOST_TIMING = "device", "CPU trace", "host timing"
"""What a row's bottleneck was read from: a device profile, a CPU profile, or the host's own clock."""
_VOCABULARY = {DEVICE: (LABELS, READINGS), CPU_TRACE: (LABELS, CPU_READINGS), HOST_TIMING: (HOST_LABELS, HOST_READINGS)}


@dataclass(frozen=True)
class HeldBack:
    """What holds a row back: the share's name, its fraction of the step, and what it was read
    from (`DEVICE`, `CPU_TRACE`, `HOST_TIMING`), which decides how the name is worded and read."""

    name: str
    fraction: float
    source: str

    @property
    def label(self) -> str:
        return _VOCABULARY[self.source][0][self.name]

    @property
    def meaning(self) -> str:
        return _VOCABULARY[self.source][1][self.name]


def has_host_timing(value: object) -> TypeGuard[dict[str, Any]]:
    return has_shares(value, HOST_PHASES)


def held_back(row: pd.Series) -> HeldBack | None:
    """The ok row's bottleneck from its breakdown, else (not profiled: by default on CPU devices
    and with `--epochs`) from its host timing; None where neither says (failed rows, rows from
    before host timing)."""
    if row[Col.STATUS] != "ok":
        return None
    name, breakdown = row.get(Col.BOTTLENECK), row.get(Col.BREAKDOWN)
    if isinstance(name, str) and name in LABELS and has_breakdown(breakdown):
        return HeldBack(name, breakdown[name], CPU_TRACE if row.get(Col.BREAKDOWN_CLOCK) == "cpu" else DEVICE)
    shares = row.get(Col.HOST_BREAKDOWN)
    if has_host_timing(shares):
        name = host_bottleneck(shares)
        return HeldBack(name, shares[name], HOST_TIMING)
    return None


def line_held_back(line: dict[str, object] | pd.Series) -> HeldBack | None:
    """What holds a compact summary's line back, from its bottleneck columns (None without one)."""
    name, pct, source = line["bottleneck"], line["bottleneck_pct"], line["bottleneck_source"]
    if not name or not isinstance(pct, float) or not isinstance(source, str):
        return None
    return HeldBack(str(name), pct / 100, source)


def reading(row: pd.Series) -> str:
    """`idle 58%: nothing runs on the device: ...` for a row with a breakdown, `input wait 31%
    (host timing): ...` for a row read from host timing; why there is none for an ok row
    that has none; nothing for failed rows."""
    held = held_back(row)
    if held is not None:
        note = row.get(Col.BOTTLENECK_NOTE) if held.source != HOST_TIMING else None
        also = f" ({note})" if isinstance(note, str) and note else ""
        source = "" if held.source == DEVICE else f" ({held.source})"
        return f"{held.label} {held.fraction:.0%}{source}: {held.meaning}{also}"
    if row[Col.STATUS] != "ok":
        return ""
    profile = row.get(Col.PROFILE)
    if isinstance(profile, dict) and (profile.get("error") or profile.get("breakdown_error")):
        return f"no breakdown: {profile.get('error') or profile.get('breakdown_error')}"
    return NOT_PROFILED if DeviceKind(row[Col.DEVICE_KIND]).on_gpu else ""


def held_back_cells(frame: pd.DataFrame) -> tuple[list[str], list[str]]:
    """Each run's "what holds it back" as a short label with its footnote's mark (`step call 93%
    (a)`), and the footnotes: what each label means, and what it was read from, said once however
    many rows it explains (the page's "Every run" and summary.md both say it so). A row without a
    bottleneck shows why in a footnote too (`no breakdown (b)`)."""
    cells: list[str] = []
    footnotes: list[str] = []
    for _, row in frame.iterrows():
        held, text = held_back(row), reading(row)
        if held is None and not text:
            cells.append("")
            continue
        if held is None:
            short, footnote = text.split(":")[0], text
        else:
            note = row.get(Col.BOTTLENECK_NOTE) if held.source != HOST_TIMING else None
            short = f"{held.label} {held.fraction:.0%}" + (f", {note}" if isinstance(note, str) and note else "")
            source = "" if held.source == DEVICE else f" ({held.source})"
            footnote = f"{held.label}{source}: {held.meaning}"
        if footnote not in footnotes:
            footnotes.append(footnote)
        cells.append(f"{short} ({footnote_mark(footnotes.index(footnote))})")
    return cells, footnotes


def footnote_mark(index: int) -> str:
    """`a`, `b`, ... `z`, `aa`, ...: the mark of footnote `index` (from 0), as `<ol type="a">` numbers it."""
    return ("" if index < 26 else footnote_mark(index // 26 - 1)) + ascii_lowercase[index % 26]


def host_timing_text(shares: object) -> str:
    """`input wait 3%, step call 95%, synchronisation 1%, loss read 1%` ("" without host timing)."""
    if not has_host_timing(shares):
        return ""
    return ", ".join(f"{HOST_LABELS[name]} {shares[name]:.0%}" for name in HOST_PHASES)


def _work_text(row: pd.Series) -> str:
    """`24.3 GFLOP per image, 135.0 TFLOP/s, 17% of 790 TFLOP/s (measured ...), 14% of the vendor's
    989.5 TFLOP/s`: the share of what this device reaches and, where that was measured, of its
    datasheet's figure too, which a plain matmul never reaches ("" without a FLOP count). A
    language model's work is per token, and its share of the peak its MFU (`units`):
    `855.4 MFLOP per token, 98.5 TFLOP/s, MFU 10% of 990 TFLOP/s (...)`."""
    flops, tflops = number(row.get(Col.FLOPS_PER_SAMPLE)), number(row.get(Col.ACHIEVED_TFLOPS))
    if flops is None or tflops is None:
        return ""
    unit, language = row_unit(row), row_language_model(row) is not None
    per = flops / unit.per_sample
    text = f"{_flop_text(per) if language else f'{per / 1e9:.1f} GFLOP'} per {unit.one}, {tflops:.1f} TFLOP/s"
    peak, fraction = number(row.get(Col.PEAK_TFLOPS)), number(row.get(Col.PEAK_FRACTION))
    if peak and fraction:
        share = f"{MFU} {fraction:.0%}" if language else f"{fraction:.0%}"
        text += f", {share} of {peak:.0f} TFLOP/s ({row.get(Col.PEAK_SOURCE)})"
    vendor = number(row.get(Col.VENDOR_PEAK_TFLOPS))
    if vendor and row.get(Col.PEAK_SOURCE) == MEASURED:
        text += f", {tflops / (vendor * row[Col.DEVICES]):.0%} of the vendor's {vendor:g} TFLOP/s"
    return text


def _flop_text(flops: float) -> str:
    """`9.6 GFLOP`, or below a GFLOP `855.4 MFLOP` (a token's work)."""
    return f"{flops / 1e9:.1f} GFLOP" if flops >= 1e9 else f"{flops / 1e6:.1f} MFLOP"


def limits_details(row: pd.Series) -> list[tuple[str, str]]:
    """How close the row is to its device and what stands between, for the run's details: the
    work and its share of the peak, the device-busy ceiling and what takes from it, the bound,
    how the steps were timed, the kernel and memory facts of a host-bound step, and the largest
    batch per GPU the row models with what it stands on (`records.largest_batch`)."""
    details = []
    work = _work_text(row)
    if work:
        details.append(("work", work))
    ceiling, taken = number(row.get(Col.DEVICE_CEILING_SAMPLES_PER_SEC)), row.get(Col.CEILING_TAKEN)
    if ceiling is not None and isinstance(taken, dict):
        unit = row_unit(row)
        parts = ", ".join(
            f"{name.replace('_', ' ')} {figure_text(unit.of(value) if number(value) is not None else value, '{:.0f}')}"
            for name, value in taken.items()
        )
        details.append(
            ("device-busy ceiling", f"{unit.of(ceiling):.0f} {unit.label}; taken from it ({unit.label}): {parts}")
        )
    if isinstance(row.get(Col.BOTTLENECK), str) and row[Col.BOTTLENECK] in BOUND_LABELS:
        details.append(("bound", BOUND_LABELS[row[Col.BOTTLENECK]]))
    if isinstance(row.get(Col.TIMING_METHOD), str):
        details.append(("timing", row[Col.TIMING_METHOD]))
    host = host_timing_text(row.get(Col.HOST_BREAKDOWN))
    if host:
        details.append(("host timing", host))
    profile = row.get(Col.PROFILE)
    kernels = profile.get("kernels_per_step") if isinstance(profile, dict) else None
    if isinstance(kernels, int | float):
        details.append(("kernels per step", f"{kernels:.0f}"))
    activations = number(row.get(Col.ACTIVATION_BYTES_ESTIMATE))
    if activations is not None:
        details.append(("activation memory (estimate)", f"{activations / 2**30:.2f} GiB per device"))
    largest, basis = number(row.get(Col.LARGEST_BATCH_ESTIMATE)), row.get(Col.LARGEST_BATCH_BASIS)
    if largest is not None and isinstance(basis, str):
        details.append(("largest batch per GPU (estimate)", f"{largest:.0f}: {basis}"))
    return details


def breakdown_text(breakdown: object) -> str:
    """`input wait 2%, host-to-device 0%, compute 61%, ...` ("" without a breakdown)."""
    if not has_breakdown(breakdown):
        return ""
    return ", ".join(f"{LABELS[name]} {breakdown[name]:.0%}" for name in CATEGORIES)
