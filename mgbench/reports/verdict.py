"""The report's first sentence: which line is fastest, by how much, how it scales and what holds it back.

Fastest is by the compare's ranking (`ranking`): images/sec for `--steps`, time to train (or
to the target) for `--epochs`, with the test metric beside it.

It is read off the compact summary (`mgbench.reports.compact`), so the sentence and the table
under it can never disagree: the fastest line is the table's first, its lead is over the second,
and what holds it back is the bottleneck label of its row at the largest device count (from its
host timing, and said so, where a CPU row was not profiled).
"""

from __future__ import annotations

from typing import Protocol

from mgbench.reports.ranking import Ranking
from mgbench.reports.readings import HOST_TIMING, line_held_back


class CompactSummary(Protocol):
    """What the verdict reads of a `compact.CompactSummary`, named by its shape: compact prints
    the verdict under its table, so importing it here would be a cycle."""

    on_gpus: bool
    ranking: Ranking

    def to_records(self) -> list[dict[str, object]]: ...


def verdict(summary: CompactSummary) -> str:
    """One sentence, e.g. `pytorch ddp is fastest on 2 GPUs: 2,301.7 img/s, 1.11x keras-jax
    jax-shard-map; 1.86x its 1-GPU throughput (93% efficiency); held back by idle (50% of the
    step): ...`, or for an `--epochs` compare `pytorch ddp trained 2 epochs fastest on 1 GPU:
    19.4 s (test AUC 0.601), 1.14x horovod horovod; ...` (`ranking`). Says so when no run finished."""
    lines, ranking = summary.to_records(), summary.ranking
    counts = sorted(
        int(key.split("_")[-1].removesuffix("dev")) for key in lines[0] if key.startswith("images_per_sec_")
    )
    top, word = counts[-1], "GPU" if summary.on_gpus else "CPU device"
    fastest = lines[0]
    if fastest[f"{ranking.ranked}_{top}dev"] is None:
        return ranking.nothing
    unit = word if top == 1 else f"{word}s"
    runner_up = [line for line in lines[1:] if line[f"{ranking.ranked}_{top}dev"]]
    parts = [ranking.lead(fastest, runner_up[0] if runner_up else None, top, unit)]
    if scaling := ranking.scaling(fastest, counts, word):
        parts.append(scaling)
    held = line_held_back(fastest)
    if held is not None:
        source = f", {HOST_TIMING}" if held.source == HOST_TIMING else ""
        parts.append(f"held back by {held.label} ({held.fraction:.0%} of the step{source}): {held.meaning}")
    else:
        parts.append("no breakdown says what holds it back (not profiled)")
    return "; ".join(parts) + "."
