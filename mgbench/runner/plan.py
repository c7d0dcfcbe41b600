"""Planning a compare: the job's every (framework, strategy, device count), resolved once, before any launch.

Each planned run carries its framework and strategy specs, so nothing downstream looks the
registry up again, and the reason it cannot happen where the registry or the machine already
knows one: a capability the adapter lacks (`unsupported`, at planning) or a framework its
interpreter cannot import (`not-installed`, marked on the planned runs once the installations
are probed, `installed_runs`). Those runs become rows without launching anything.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from mgbench.core.config import RunConfig
from mgbench.core.errors import UsageError
from mgbench.core.job import Job
from mgbench.frameworks.registry import ALL_STRATEGIES, framework_spec
from mgbench.frameworks.specs import FrameworkSpec, StrategySpec
from mgbench.records.results import RunResult, Status
from mgbench.runner.launchers import launcher_for
from mgbench.runner.venvs import Installation

Scaling = Literal["weak", "strong"]


@dataclass(frozen=True)
class PlannedRun:
    config: RunConfig
    framework: FrameworkSpec
    strategy: StrategySpec
    refusal: tuple[Status, str] | None = None
    """Why this run will not be launched (`unsupported` or `not-installed`, and the reason)."""

    def refused_row(self) -> RunResult | None:
        """The row this run gets without launching, or None when it is to be launched."""
        if self.refusal is None:
            return None
        status, reason = self.refusal
        return RunResult(self.config, status, error=reason)

    def with_dataset_check(self, checked: Job) -> PlannedRun:
        """This run of `checked`, the job as the dataset check found it (`check_dataset`): the
        images it left out and the range of wide ones, which every reader of the run needs."""
        config = self.config.with_changes(skipped_images=checked.skipped_images, bit_depth=checked.bit_depth)
        return replace(self, config=config)


def chosen_strategies(spec: FrameworkSpec, strategies: list[str] | None) -> list[str]:
    """The framework's default strategies, all of them (`all`), or the ones named (each checked)."""
    if strategies is None:
        return list(spec.defaults)
    if strategies == [ALL_STRATEGIES]:
        return [strategy.name for strategy in spec.strategies]
    return [spec.strategy(name).name for name in strategies]


def checked_strategy(spec: FrameworkSpec, name: str) -> StrategySpec:
    """The framework's strategy `name`, its launcher known: a spec naming a launcher there is none
    of (a plugin's spec can name anything) is one UsageError at planning, before anything starts,
    as an unknown strategy is, rather than a compare stopped when that run's turn comes."""
    strategy = spec.strategy(name)
    try:
        launcher_for(strategy.launcher)
    except UsageError as error:
        raise UsageError(f"{spec.name} {strategy.name}: {error}") from None
    return strategy


def batch_for(job: Job, count: int, counts: list[int], scaling: Scaling) -> int:
    """Weak scaling keeps `job.batch_per_device`; strong scaling keeps the global batch of the
    smallest device count and splits it, which must divide evenly."""
    if scaling == "weak":
        return job.batch_per_device
    global_batch = job.batch_per_device * counts[0]
    if global_batch % count:
        raise UsageError(f"strong scaling: global batch {global_batch} does not split over {count} devices")
    return global_batch // count


def framework_job(job: Job, spec: FrameworkSpec) -> Job:
    """`job` as `spec`'s framework trains it: at its own default batch for the model where the job's
    batch is the default and the framework declares a smaller one (`DeviceMemory.gpu_batches`: the
    job's does not fit an 80 GB GPU), else as it is."""
    own = spec.memory.gpu_batch(job)
    if own is None or own.batch_per_device >= job.batch_per_device:
        return job
    return job.with_changes(batch_per_device=own.batch_per_device)


def not_installed_reason(spec: FrameworkSpec, found: Installation) -> str | None:
    """What the framework's interpreter cannot import (or which program is missing), and how to install it."""
    if found.installed:
        return None
    return f"{spec.name} is not installed: {found.interpreter} lacks {', '.join(found.missing)}; install: {spec.install_hint}"


def plan_runs(
    job: Job, frameworks: list[str], strategies: list[str] | None, device_counts: list[int], scaling: Scaling
) -> list[PlannedRun]:
    """Every framework x strategy x device count of `job`, validated before anything runs, each
    refused where its framework cannot train it. Each run trains in the job's data format, or
    without one in its framework's default format for the model, and at the job's batch, or where
    the job's is the default, at its framework's own default for the model where it declares a
    smaller one (`framework_job`)."""
    counts = sorted(set(device_counts))
    planned = []
    for name in frameworks:
        spec = framework_spec(name)
        data_format = job.data_format or spec.capabilities.default_data_format(job.model)
        own_job = framework_job(job, spec)
        for strategy_name in chosen_strategies(spec, strategies):
            strategy = checked_strategy(spec, strategy_name)
            for count in counts:
                batch = batch_for(own_job, count, counts, scaling)
                config = RunConfig.of(own_job, spec.name, strategy.name, count, batch, data_format)
                refusal = spec.refusal(config)
                planned.append(PlannedRun(config, spec, strategy, (Status.UNSUPPORTED, refusal) if refusal else None))
    return planned


def installed_runs(runs: list[PlannedRun], installed: dict[str, str | None]) -> list[PlannedRun]:
    """The runs of the frameworks in `installed`, which maps each to why it is not installed
    (None: it is), those of the others left out; a run of a framework not installed is refused
    as `not-installed`, whatever else it was refused for, as no row can say more."""
    return [
        replace(run, refusal=(Status.NOT_INSTALLED, missing)) if (missing := installed[run.config.framework]) else run
        for run in runs
        if run.config.framework in installed
    ]


def replan(config: RunConfig, missing: str | None = None) -> PlannedRun:
    """A recorded config (resume, `mgbench run`) resolved as planning resolves it; `missing`
    is why its framework is not installed (None: it is)."""
    spec = framework_spec(config.framework)
    strategy = checked_strategy(spec, config.strategy)
    refusal = spec.refusal(config)
    if missing:
        return PlannedRun(config, spec, strategy, (Status.NOT_INSTALLED, missing))
    return PlannedRun(config, spec, strategy, (Status.UNSUPPORTED, refusal) if refusal else None)
