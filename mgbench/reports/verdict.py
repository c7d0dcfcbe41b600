"""The report's first sentence: which line is fastest, by how much, how it scales and what holds it back.

It is read off the compact summary (`mgbench.reports.compact`), so the sentence and the table
under it can never disagree: the fastest line is the table's first, its lead is over the second,
and what holds it back is the bottleneck label of its row at the largest device count (from its
host timing, and said so, where a CPU row was not profiled).
"""

from __future__ import annotations

from typing import Protocol

from mgbench.reports.readings import HOST_TIMING, line_held_back


class CompactSummary(Protocol):
    """What the verdict reads of a `compact.CompactSummary`, named by its shape: compact prints
    the verdict under its table, so importing it here would be a cycle."""

    on_gpus: bool

    def to_records(self) -> list[dict[str, object]]: ...


def _name(line: dict[str, object]) -> str:
    return f"{line['framework']} {line['strategy']}"


def verdict(summary: CompactSummary) -> str:
    """One sentence, e.g. `pytorch ddp is fastest on 2 GPUs: 2,301.7 img/s, 1.11x keras-jax
    jax-shard-map; 1.86x its 1-GPU throughput (93% efficiency); held back by idle (50% of the
    step): ...`. Says so when no run finished."""
    lines = summary.to_records()
    counts = sorted(
        int(key.split("_")[-1].removesuffix("dev")) for key in lines[0] if key.startswith("images_per_sec_")
    )
    top, word = counts[-1], "GPU" if summary.on_gpus else "CPU device"
    fastest = lines[0]
    rate = fastest[f"images_per_sec_{top}dev"]
    if rate is None:
        return "No run finished: nothing to compare (the notes under the table say why)."
    unit = word if top == 1 else f"{word}s"
    parts = [f"{_name(fastest)} is fastest on {top} {unit}: {rate:,.1f} img/s"]
    runner_up = [line for line in lines[1:] if line[f"images_per_sec_{top}dev"]]
    if runner_up:
        parts[0] += f", {rate / runner_up[0][f'images_per_sec_{top}dev']:.2f}x {_name(runner_up[0])}"
    else:
        parts[0] += " (the only line that ran there)"
    base = fastest[f"images_per_sec_{counts[0]}dev"]
    if len(counts) > 1 and base:
        efficiency = fastest[f"scaling_efficiency_pct_{top}dev"]
        parts.append(f"{rate / base:.2f}x its {counts[0]}-{word} throughput ({efficiency:.0f}% scaling efficiency)")
    held = line_held_back(fastest)
    if held is not None:
        source = f", {HOST_TIMING}" if held.source == HOST_TIMING else ""
        parts.append(f"held back by {held.label} ({held.fraction:.0%} of the step{source}): {held.meaning}")
    else:
        parts.append("no breakdown says what holds it back (not profiled)")
    return "; ".join(parts) + "."
