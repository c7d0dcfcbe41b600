"""Speed-up, scaling efficiency and per-device throughput of each row, kept in the results file.

They are derived from the rows themselves: a row's throughput over the throughput at the smallest
device count of its framework, strategy and job (normally 1) is its speed-up, that over the device
ratio its efficiency (a fraction). They are defined here once: the results file's writer
(`records.finished`) puts them in every row it writes, so a script reading `results.jsonl` gets
them beside the figures they come from, and a report reads them from the rows (`scaled`).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Hashable

from mgbench.core.config import RunConfig
from mgbench.core.job import Job
from mgbench.records.figures import ScalingFigures
from mgbench.records.results import RunResult, Status, fields_of

JOB_FIELDS = fields_of(Job)


def scaling_group(config: RunConfig) -> Hashable:
    """What a row's speed-up is taken within: its framework, strategy and job, whatever batch per
    device the job ran at (strong scaling splits it over the larger counts; running out of memory
    halves it)."""
    job = tuple(getattr(config.job, name) for name in JOB_FIELDS if name != "batch_per_device")
    return config.framework, config.strategy, job


def steady_rate(row: RunResult) -> float:
    """The steady rate a row's scaling figures are taken from: 0 where it did not finish."""
    return (row.timing.samples_per_sec or 0.0) if row.status == Status.OK else 0.0


def measured(row: RunResult) -> bool:
    """Whether a row has figures to scale: it finished, with a steady rate."""
    return steady_rate(row) > 0


def scaling_figures(rows: list[RunResult]) -> list[ScalingFigures]:
    """Per row, in order: its figures against the smallest device count of its `scaling_group`
    among the rows `measured` (all None where the row did not finish)."""
    groups: dict[Hashable, list[RunResult]] = defaultdict(list)
    for row in filter(measured, rows):
        groups[scaling_group(row.config)].append(row)
    figures = []
    for row in rows:
        if not measured(row):
            figures.append(ScalingFigures())
            continue
        base = min(groups[scaling_group(row.config)], key=lambda other: other.config.devices)
        speedup = steady_rate(row) / steady_rate(base)
        figures.append(
            ScalingFigures(
                speedup=speedup,
                scaling_efficiency_fraction=speedup / (row.config.devices / base.config.devices),
                samples_per_sec_per_device=steady_rate(row) / row.config.devices,
            )
        )
    return figures


def with_scaling(rows: list[RunResult]) -> list[RunResult]:
    """The rows, each with its `scaling_figures` in place of any it held."""
    return [dataclasses.replace(row, scaling=figures) for row, figures in zip(rows, scaling_figures(rows), strict=True)]


def scaled(rows: list[RunResult]) -> list[RunResult]:
    """The rows with their scaling figures as a report reads them: as the rows hold them, or,
    where an ok row holds none (a folder written before rows held them, a row not yet written),
    computed for every row by the same definition (`with_scaling`)."""
    if all(row.scaling.speedup is not None for row in filter(measured, rows)):
        return rows
    return with_scaling(rows)
