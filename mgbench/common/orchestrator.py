"""Plans and executes the runs of a compare: every (framework, strategy) on each device count.

Each run is its own subprocess (under its launcher and with its framework's interpreter),
watched by the device monitor and bounded by a timeout. Whatever happens to it, exactly one
row is appended to `results.jsonl` as soon as it ends, so a crash, a hang or an out-of-memory
in one framework never costs the rows of the others.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Literal

from mgbench.common.config import RunConfig
from mgbench.common.devices import visible_gpus
from mgbench.common.driver import LAUNCH_TIME_ENV
from mgbench.common.errors import UsageError
from mgbench.common.launch import execute, interpreter_for, launch_command
from mgbench.common.monitor import DeviceMonitor
from mgbench.common.results import RESULTS_FILE, RunResult, Status, append_result
from mgbench.frameworks import framework_spec

Scaling = Literal["weak", "strong"]
OOM_MARKERS = ("out of memory", "outofmemoryerror", "resource_exhausted", "resourceexhaustederror")


def plan_runs(
    base: RunConfig,
    frameworks: list[str],
    strategies: list[str] | None,
    device_counts: list[int],
    scaling: Scaling,
) -> list[RunConfig]:
    """Configs for every framework x strategy x device count, validated before anything runs.

    Weak scaling keeps `base.batch_per_device`; strong scaling keeps the global batch of the
    smallest device count and splits it, which must divide evenly.
    """
    counts = sorted(set(device_counts))
    configs = []
    for name in frameworks:
        spec = framework_spec(name)
        chosen = [s.name for s in spec.strategies] if strategies is None else strategies
        for strategy in chosen:
            spec.strategy(strategy)
            for count in counts:
                batch = base.batch_per_device
                if scaling == "strong":
                    global_batch = base.batch_per_device * counts[0]
                    if global_batch % count:
                        raise UsageError(f"strong scaling: global batch {global_batch} does not split over {count} devices")
                    batch = global_batch // count
                configs.append(base.with_changes(framework=name, strategy=strategy, devices=count, batch_per_device=batch))
    return configs


def child_environment(config: RunConfig) -> dict[str, str]:
    """The run's environment: the launch clock, CPU threads shared fairly between CPU 'devices',
    and what the framework reads at import (`FrameworkSpec.environment_variables`), last."""
    env = dict(os.environ)
    env[LAUNCH_TIME_ENV] = repr(time.time())
    env["PYTHONUNBUFFERED"] = "1"
    if config.device_kind == "cpu":
        env["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // config.devices))
    env.update(framework_spec(config.framework).variables_for(config))
    return env


def classify_failure(timed_out: bool, log_tail: str) -> Status:
    if timed_out:
        return "timeout"
    lowered = log_tail.lower()
    return "oom" if any(marker in lowered for marker in OOM_MARKERS) else "failed"


@dataclass(frozen=True)
class RunFolder:
    """Where a compare writes: results, per-run configs, logs and utilisation traces."""

    root: Path

    @property
    def results(self) -> Path:
        return self.root / RESULTS_FILE

    def config_file(self, run_id: str) -> Path:
        return self.root / "configs" / f"{run_id}.json"

    def raw_result(self, run_id: str) -> Path:
        return self.root / "raw" / f"{run_id}.json"

    def log(self, run_id: str) -> Path:
        return self.root / "logs" / f"{run_id}.log"

    def trace(self, run_id: str) -> Path:
        return self.root / "traces" / f"{run_id}.csv"


def execute_run(config: RunConfig, folder: RunFolder, timeout: float, state_path: Path | None = None) -> RunResult:
    """One run in its own subprocess; always returns a result, a failure row if it did not finish.

    `state_path`, when given, receives the trained weights (equivalence checks).
    """
    spec = framework_spec(config.framework)
    strategy = spec.strategy(config.strategy)
    if config.device_kind == "cpu" and config.devices > 1 and strategy.cpu_multi_device_note:
        return RunResult(config, "unsupported", error=f"needs GPUs: {strategy.cpu_multi_device_note}")
    interpreter = interpreter_for(spec)
    config_file, raw = folder.config_file(config.run_id), folder.raw_result(config.run_id)
    config_file.parent.mkdir(parents=True, exist_ok=True)
    config_file.write_text(config.to_json())
    raw.unlink(missing_ok=True)
    run_args = ["--config", str(config_file), "--result-file", str(raw)]
    if state_path is not None:
        run_args += ["--save-state", str(state_path)]
    command = launch_command(interpreter, strategy.launcher, config.devices, run_args)
    gpus = [gpu.index for gpu in visible_gpus()[: config.devices]] if config.device_kind == "cuda" else []
    with DeviceMonitor(folder.trace(config.run_id), gpus):
        outcome = execute(command, child_environment(config), timeout, folder.log(config.run_id))
    command_text = " ".join(command)
    if outcome.returncode == 0 and raw.exists():
        result = RunResult.from_record(json.loads(raw.read_text()))
        result.command = command_text
        return result
    status = classify_failure(outcome.timed_out, outcome.log_tail)
    if outcome.timed_out:
        error = f"timed out after {timeout:.0f} s\n{outcome.log_tail}"
    else:
        error = f"exit code {outcome.returncode}\n{outcome.log_tail}"
    return RunResult(
        config, status, error=error, command=command_text, interpreter=interpreter, wall_seconds=outcome.seconds
    )


def run_compare(
    configs: list[RunConfig],
    folder: RunFolder,
    timeout: float,
    on_result: Callable[[RunResult], None] = lambda result: None,
) -> list[RunResult]:
    """Execute every planned run in order, appending each row as soon as it ends."""
    results = []
    for config in configs:
        result = execute_run(config, folder, timeout)
        append_result(folder.results, result)
        results.append(result)
        on_result(result)
    return results
