"""The largest batch per GPU that fits a row's GPUs, modelled from the row rather than searched for.

Measuring it takes a search of runs at growing batches, too costly for every compare, so each GPU
row is given an estimate and says it is one. A step's peak memory is taken as linear in the batch
per device, `peak(b) = fixed + b * per_sample`: what does not grow with the batch (weights,
gradients, optimizer state, workspace) and what does (the activations the forward keeps for the
backward). The line goes through the row's own peak allocated at the batch it ran; its slope is
fitted to the peaks of the same strategy at two or more batches where rounds ran at other
batches (after running out of memory), else it is the model's activation estimate per sample
(`records.peak`: `ModelWork.saved_elements_per_sample` at the row's precision). The largest batch
is then `floor((capacity - fixed) / per_sample)`, `capacity` the smallest of the row's GPUs'
memory (NVML's total, as the row's environment holds it), or `--gpu-memory-gb` where lower. It
is never below the batch that ran (it fitted) nor at or above one that ran out of memory.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, replace

from mgbench.records.results import RunResult, Status

GIB = 2**30
MIB = 2**20


@dataclass(frozen=True)
class MemoryLine:
    """A step's peak memory per device as a line in the batch per device, and what it stands on."""

    fixed: float
    """Bytes that do not grow with the batch."""
    per_sample: float
    """Bytes one more sample of the batch adds."""
    basis: str
    """Where the line comes from, in words."""

    def largest_batch(self, capacity: int) -> int | None:
        """The largest batch whose peak is within `capacity` bytes (None: not even one sample fits
        the line, or the line does not grow)."""
        if self.per_sample <= 0:
            return None
        batch = math.floor((capacity - self.fixed) / self.per_sample)
        return batch if batch >= 1 else None


def capacity_bytes(result: RunResult) -> int | None:
    """What one of the row's GPUs holds: the smallest memory among the GPUs its environment lists
    (NVML's total), or `--gpu-memory-gb` where lower; None where neither is known."""
    gpus = result.origin.environment.get("gpus") or []
    totals = [
        int(gpu["memory_total_mib"]) * MIB for gpu in gpus if isinstance(gpu, dict) and gpu.get("memory_total_mib")
    ]
    cap = result.config.job.gpu_memory_gb
    limits = [*([min(totals)] if totals else []), *([int(cap * GIB)] if cap is not None else [])]
    return min(limits) if limits else None


def _strategy_key(result: RunResult) -> str:
    """What rows of the same strategy, devices and job share whatever their batch per device."""
    return json.dumps({**result.config.to_dict(), "batch_per_device": None}, sort_keys=True, default=str)


def _peaks(result: RunResult) -> tuple[int, int] | None:
    """An ok GPU round's batch per device and its peak allocated (None: it has no peak)."""
    job = result.config.job
    if result.status != Status.OK or not job.device_kind.on_gpu or result.peak_memory_bytes is None:
        return None
    return job.batch_per_device, result.peak_memory_bytes


def fitted_line(points: Iterable[tuple[int, int]]) -> MemoryLine | None:
    """The least-squares line through the peaks at two or more batches (None: one batch only)."""
    by_batch: dict[int, list[int]] = {}
    for batch, peak in points:
        by_batch.setdefault(batch, []).append(peak)
    if len(by_batch) < 2:
        return None
    batches = sorted(by_batch)
    means = [sum(by_batch[b]) / len(by_batch[b]) for b in batches]
    mean_b, mean_p = sum(batches) / len(batches), sum(means) / len(means)
    slope = sum((b - mean_b) * (p - mean_p) for b, p in zip(batches, means, strict=True)) / sum(
        (b - mean_b) ** 2 for b in batches
    )
    named = ", ".join(map(str, batches[:-1])) + f" and {batches[-1]}"
    basis = f"linear in the batch, fitted to the peaks allocated at {named} per GPU ({slope / MIB:,.1f} MiB a sample)"
    return MemoryLine(mean_p - slope * mean_b, slope, basis)


def estimated_line(result: RunResult) -> MemoryLine | None:
    """The line through the row's peak allocated at its batch with the activation estimate's slope
    (None: the row has no peak or no estimate)."""
    batch, peak, activations = (
        result.config.job.batch_per_device,
        result.peak_memory_bytes,
        result.limit.activation_bytes_estimate,
    )
    if peak is None or not activations or batch < 1:
        return None
    basis = (
        f"linear in the batch from the peak allocated at {batch} per GPU ({peak / GIB:.2f} GiB) and the activation "
        f"estimate ({activations / batch / MIB:,.1f} MiB a sample)"
    )
    return MemoryLine(peak - activations, activations / batch, basis)


def out_of_memory_batch(result: RunResult) -> int | None:
    """The smallest batch per device the row's run ran out of memory at: twice the one that ran,
    where it was halved (None: it was not)."""
    return 2 * result.config.job.batch_per_device if result.retries.oom_retries else None


def with_largest_batch(row: RunResult, line: MemoryLine | None) -> RunResult:
    """`row` with its largest batch per GPU and what it stands on, where the line and its GPUs'
    memory are known; kept within what ran (it fitted) and below what ran out of memory."""
    capacity = capacity_bytes(row)
    if _peaks(row) is None or line is None or capacity is None or (estimate := line.largest_batch(capacity)) is None:
        return row
    basis = f"{line.basis}, in {capacity / GIB:.1f} GiB"
    ran, failed = row.config.job.batch_per_device, out_of_memory_batch(row)
    if estimate < ran:
        estimate, basis = ran, f"{basis}; raised to {ran}, which ran"
    if failed is not None and estimate >= failed:
        estimate, basis = failed - 1, f"{basis}; below {failed}, which ran out of memory"
    return replace(row, limit=replace(row.limit, largest_batch_estimate=estimate, largest_batch_basis=basis))


def with_largest_batches(rows: list[RunResult], runs: list[list[RunResult]]) -> list[RunResult]:
    """Each finished row (`rows`, one per run of `runs`) with its largest batch per GPU: the line
    fitted to every ok round of its strategy at two or more batches, else its own estimated line."""
    points: dict[str, list[tuple[int, int]]] = {}
    for rounds in runs:
        for result in rounds:
            if (point := _peaks(result)) is not None:
                points.setdefault(_strategy_key(result), []).append(point)
    return [with_largest_batch(row, _line(row, points.get(_strategy_key(row), []))) for row in rows]


def _line(row: RunResult, points: list[tuple[int, int]]) -> MemoryLine | None:
    """The fitted line where the peaks grow with the batch, else the row's estimated one."""
    fitted = fitted_line(points)
    return fitted if fitted is not None and fitted.per_sample > 0 else estimated_line(row)
