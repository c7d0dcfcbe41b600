"""The training loop every framework runs through, so every number is taken the same way.

Per step: the clock starts, the next batch is taken (time blocked here is input wait), the
adapter steps, the driver synchronises the devices, the clock stops. Start-up is measured
from the launch (the orchestrator passes its clock in MGBENCH_LAUNCH_TIME) or, for a bare
`mgbench run`, from this process's creation.
"""

from __future__ import annotations

import os
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import psutil

from mgbench.common.config import RunConfig
from mgbench.common.environment import host_environment
from mgbench.common.profiling import profile_window
from mgbench.common.protocol import Trainer
from mgbench.common.results import RunResult
from mgbench.common.timing import summarise_steps

LAUNCH_TIME_ENV = "MGBENCH_LAUNCH_TIME"
PROGRESS_EVERY_FRACTION = 0.1


def launch_time() -> float:
    """Epoch seconds when this run was launched (by the orchestrator, else this process's start)."""
    value = os.environ.get(LAUNCH_TIME_ENV)
    return float(value) if value else psutil.Process().create_time()


def run_training(
    trainer: Trainer, config: RunConfig, state_path: Path | None = None, profile_dir: Path | None = None
) -> RunResult | None:
    """Set up, train `config.steps` timed steps, evaluate, close; the primary process gets the result.

    With `config.profile_steps` and a `profile_dir`, that many more (untimed) steps run under
    the framework's profiler before evaluation.
    """
    launched = launch_time()
    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    info = trainer.setup(config)
    placement = trainer.placement
    batches = trainer.batches()
    step_seconds: list[float] = []
    waits: list[float] = []
    losses: list[float] = []
    progress_every = max(1, int(config.steps * PROGRESS_EVERY_FRACTION))
    first_step_at = time.time()
    for step in range(config.steps):
        t0 = time.perf_counter()
        batch = next(batches)
        t1 = time.perf_counter()
        trainer.train_step(batch)
        trainer.synchronize()
        t2 = time.perf_counter()
        step_seconds.append(t2 - t0)
        waits.append(t1 - t0)
        losses.append(trainer.last_loss())
        if placement.is_primary and (step + 1) % progress_every == 0:
            rate = config.global_batch / step_seconds[-1]
            print(f"step {step + 1}/{config.steps}: {rate:.1f} img/s, loss {losses[-1]:.4f}", file=sys.stderr, flush=True)
    profile = None
    if config.profile_steps and profile_dir is not None:
        profile = profile_window(trainer, batches, config.profile_steps, profile_dir, placement.rank)
    eval_start = time.perf_counter()
    metrics = trainer.evaluate()
    eval_seconds = time.perf_counter() - eval_start
    if state_path is not None and placement.is_primary:
        trainer.save_state(state_path)
    peak = trainer.peak_memory_bytes()
    versions = trainer.framework_versions()
    trainer.close()
    if not placement.is_primary:
        return None
    stats = summarise_steps(step_seconds, waits, config.global_batch)
    return RunResult(
        config=config,
        status="ok",
        interpreter=sys.executable,
        started_at=started_at,
        wall_seconds=time.time() - launched,
        environment=host_environment(),
        framework_versions=versions,
        device_names=placement.device_names,
        parameters=info.parameters,
        startup_seconds=first_step_at - launched,
        warmup_steps=stats.warmup_steps,
        warmup_detected=stats.warmup_detected,
        warmup_seconds=stats.warmup_seconds,
        steady_steps=stats.steady_steps,
        median_step_seconds=stats.median_step_seconds,
        images_per_sec=stats.images_per_sec,
        images_per_sec_p10=stats.images_per_sec_p10,
        images_per_sec_p90=stats.images_per_sec_p90,
        input_wait_fraction=stats.input_wait_fraction,
        train_seconds=stats.train_seconds,
        eval_seconds=eval_seconds,
        eval_metrics=metrics,
        final_loss=losses[-1],
        peak_memory_bytes=peak,
        step_seconds=step_seconds,
        input_wait_seconds=waits,
        losses=losses,
        profile=profile,
    )
