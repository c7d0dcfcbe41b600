"""The training loop every framework runs through, so every number is taken the same way.

Per step: the next batch is taken (time blocked here is input wait), the adapter steps, the
step timer marks the step's end, and its loss is kept unread; the devices are synchronised and
the losses read once, at the end of the timed window, where the framework allows it
(`mgbench.measure.step_timer`: CUDA events time each step on the device's clock; frameworks
without device events synchronise after every step). Training in epochs
(`--epochs`, real data) runs the same clocked steps epoch by epoch, sets each step's learning
rate from the linear scaling rule with warm-up, and times validation apart from training. Start-up is measured
from the launch (the orchestrator passes its clock in MGBENCH_LAUNCH_TIME) or, for a bare
`mgbench run`, from this process's creation.

A run whose step is compiled (`--compile`, or a framework that always compiles) has one more
phase between start-up and warm-up: compilers compile at the first call (torch.compile, XLA),
so the run's first training step is its compile step, clocked on its own as `compile_seconds`
and kept out of the step series, so warm-up detection and throughput see compiled steps only.
`--steps N` still times N steps after it; with `--epochs` it is the first step of the first epoch.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from mgbench.core.config import RunConfig
from mgbench.core.errors import UsageError
from mgbench.core.safe_files import new_file_by_writer
from mgbench.core.target import TargetMetric
from mgbench.machine.host import host_environment
from mgbench.measure.breakdown import TimedStep
from mgbench.measure.metrics import diverged
from mgbench.measure.step_timer import Clock, StepTimer, step_sync_forced
from mgbench.measure.timing import host_phase_shares, steady_window, summarise_steps
from mgbench.records.results import RunResult
from mgbench.training.loaders import loader_workers
from mgbench.training.profiling import profile_window
from mgbench.training.protocol import Adapter
from mgbench.training.schedule import learning_rate_at

LAUNCH_TIME_ENV = "MGBENCH_LAUNCH_TIME"
PROGRESS_EVERY_FRACTION = 0.1
STEP_LOSSES_KEPT = 10
"""The first training losses every row records (`step_losses`): the same-start check compares
them between frameworks."""


def launch_time() -> float:
    """Epoch seconds when this run was launched (by the orchestrator, else this process's start)."""
    value = os.environ.get(LAUNCH_TIME_ENV)
    return float(value) if value else psutil.Process().create_time()


class StepClock:
    """Times steps the same way in every loop (both training loops and the profiled window).

    Per step: wait for the batch (input wait), hand it to the adapter, mark it with the step
    timer, keep its loss unread. At the end of a window (`finish`) the devices are synchronised
    once, and the timer's per-step times and the losses are read (`mgbench.measure.step_timer`).
    `synchronised` (the profiled window) or MGBENCH_STEP_SYNC=1 makes every step synchronise.
    The host's own time per step is kept by phase (`HOST_PHASES`) for the host-timing breakdown.
    """

    def __init__(
        self,
        trainer: Adapter,
        config: RunConfig,
        total_steps: int,
        progress: bool = True,
        compiling: bool = False,
        synchronised: bool = False,
        clock: Clock = time.perf_counter,
    ):
        self.trainer = trainer
        self.config = config
        self.total_steps = total_steps
        self.progress = progress
        self.progress_every = max(1, int(total_steps * PROGRESS_EVERY_FRACTION))
        self.clock = clock
        self.step_seconds: list[float] = []
        self.waits: list[float] = []
        self.losses: list[float] = []
        self.compile_losses: list[float] = []
        self.host_phases: list[tuple[float, ...]] = []
        self.compile_seconds: float | None = None
        self.compile_pending = compiling
        own = trainer.step_timer(clock)
        forced = synchronised or step_sync_forced()
        self.timer = StepTimer(trainer.synchronize, clock) if forced else own
        self.timing_method = own.method if own.method == self.timer.method else f"{self.timer.method} (forced)"
        self.pending: list[Any] = []
        self.in_window = False
        self.progress_mark = 0.0

    @property
    def steps_taken(self) -> int:
        return len(self.waits)

    def step(self, batches: Iterator[Any]) -> None:
        if self.compile_pending:
            self._compile_step(batches)
            return
        if not self.in_window:
            self.trainer.synchronize()
            self.timer.start()
            self.in_window, self.progress_mark = True, self.clock()
        t0 = self.clock()
        batch = next(batches)
        t1 = self.clock()
        self.trainer.train_step(batch)
        t2 = self.clock()
        self.timer.mark()
        t3 = self.clock()
        self.pending.append(self.trainer.pending_loss())
        t4 = self.clock()
        self.waits.append(t1 - t0)
        self.host_phases.append((t1 - t0, t2 - t1, t3 - t2, t4 - t3))
        done = self.steps_taken
        if self.progress and self.trainer.placement.is_primary and done % self.progress_every == 0:
            rate = self.config.global_batch * self.progress_every / (t4 - self.progress_mark)
            self.progress_mark = t4
            print(f"step {done}/{self.total_steps}: {rate:.1f} img/s (host clock)", file=sys.stderr, flush=True)

    def _compile_step(self, batches: Iterator[Any]) -> None:
        """The first step of a compiled run, synchronised and clocked on its own."""
        t0 = self.clock()
        self.trainer.train_step(next(batches))
        self.trainer.synchronize()
        self.compile_seconds, self.compile_pending = self.clock() - t0, False
        self.compile_losses = self.trainer.read_losses([self.trainer.pending_loss()])
        if self.trainer.placement.is_primary:
            print(f"compile step: {self.compile_seconds:.1f} s", file=sys.stderr, flush=True)

    def finish(self) -> None:
        """End the window: synchronise once, then read the steps' times and losses."""
        if not self.in_window:
            return
        self.trainer.synchronize()
        self.step_seconds.extend(self.timer.step_seconds())
        self.losses.extend(self.trainer.read_losses(self.pending))
        self.pending, self.in_window = [], False

    def loss_figures(self) -> dict[str, Any]:
        """The row's losses: every timed step's, the first `STEP_LOSSES_KEPT` (a compiled run's
        compile step first), the last, and the step (counted the same way) at which the loss was
        first no finite number, each loss from there on saying so (`metrics.diverged`)."""
        every, diverged_at = diverged(self.compile_losses + self.losses)
        losses = every[len(self.compile_losses) :]
        return {
            "losses": losses,
            "step_losses": every[:STEP_LOSSES_KEPT],
            "final_loss": losses[-1],
            "diverged_at_step": diverged_at,
        }


@dataclasses.dataclass(frozen=True)
class EpochsTrained:
    clock: StepClock
    epoch_metrics: list[dict[str, float]]
    """One row per epoch: its training figures and its validation metrics, prefixed `val_`."""
    last_validation: dict[str, float]
    time_to_train_seconds: float
    """Wall seconds from the first training step to the end of the last validation."""
    target_epoch: int | None = None
    """The epoch whose validation reached `--target-metric` (the last trained); None: not reached, or none set."""
    target_warning: str | None = None
    """Why a row with a target has no time to it: the target was not reached in `--epochs` epochs."""

    def target_figures(self, startup_seconds: float) -> dict[str, Any]:
        """The row's time-to-target figures: from the first training step (a compiled run's compile
        step) to the end of the validation that reached the target, and from launch (with
        `startup_seconds`); None where it was not reached, with the row's warning saying so."""
        reached = None if self.target_epoch is None else self.epoch_metrics[self.target_epoch - 1]["elapsed_seconds"]
        return {
            "time_to_target_seconds": reached,
            "time_to_target_with_startup_seconds": None if reached is None else startup_seconds + reached,
            "target_epoch": self.target_epoch,
            "warnings": [self.target_warning] if self.target_warning else [],
        }


def train_epochs(
    trainer: Adapter, config: RunConfig, compiling: bool, step_clock: Clock = time.perf_counter
) -> EpochsTrained:
    """`config.job.epochs` epochs with the scaled, warmed-up learning rate and validation after each;
    with `config.job.target_metric`, only up to the first epoch whose validation reaches it. Every
    process stops alike: each is handed the same gathered validation (`Adapter.evaluate`).
    `step_clock` times the steps, as in `run_training`."""
    target = TargetMetric.parse(config.job.target_metric) if config.job.target_metric else None
    per_epoch = trainer.steps_per_epoch()
    clock = StepClock(trainer, config, per_epoch * config.job.epochs, compiling=compiling, clock=step_clock)
    epoch_metrics: list[dict[str, float]] = []
    target_epoch = None
    started = time.perf_counter()
    for epoch in range(config.job.epochs):
        batches = trainer.epoch_batches(epoch)
        first = len(clock.step_seconds)
        for step in range(per_epoch):
            trainer.set_learning_rate(
                learning_rate_at(
                    epoch * per_epoch + step,
                    per_epoch,
                    config.job.learning_rate,
                    config.global_batch,
                    config.job.lr_reference_batch,
                )
            )
            clock.step(batches)
        clock.finish()
        val_start = time.perf_counter()
        metrics = trainer.evaluate("val")
        val_seconds = time.perf_counter() - val_start
        train_seconds = float(sum(clock.step_seconds[first:]))
        epoch_metrics.append(
            {
                "epoch": epoch + 1,
                "train_loss": float(np.mean(clock.losses[first:])),
                "train_seconds": train_seconds,
                "images_per_sec": len(clock.step_seconds[first:]) * config.global_batch / train_seconds,
                **{f"val_{name}": value for name, value in metrics.items()},
                "val_seconds": val_seconds,
                "elapsed_seconds": time.perf_counter() - started,
            }
        )
        if target is not None and target.reached(metrics):
            target_epoch = epoch + 1
        if trainer.placement.is_primary:
            row = epoch_metrics[-1]
            print(
                f"epoch {epoch + 1}/{config.job.epochs}: train loss {row['train_loss']:.4f}, "
                f"val loss {row['val_loss']:.4f}, val AUC {row['val_auc']:.4f} ({val_seconds:.1f} s)"
                + (f": target {target} reached" if target_epoch else ""),
                file=sys.stderr,
                flush=True,
            )
        if target_epoch:
            break
    warning = None
    if target is not None and target_epoch is None:
        last = metrics.get(target.name, float("nan"))
        warning = (
            f"target {target} not reached in {config.job.epochs} epoch(s) (last validation {target.name} {last:.4f})"
        )
    return EpochsTrained(clock, epoch_metrics, metrics, time.perf_counter() - started, target_epoch, warning)


def closed(feed: Iterator[Any]) -> None:
    """Ends `feed` where it can be ended (its `close`: a generator's, a staged feed's): the thread
    that fills it stops and lets go of the loader it reads, whose workers the adapter's `close`
    can then end."""
    close = getattr(feed, "close", None)
    if close is not None:
        close()


def save_state(trainer: Adapter, path: Path) -> None:
    """The trained weights as the new file `path` (`run --save-state`, checked free before the run):
    written beside it and linked to the name, so that a file made there meanwhile is not replaced
    (one UsageError), nor a link planted there written through."""
    try:
        with new_file_by_writer(path) as temporary:
            trainer.save_state(temporary)
    except FileExistsError:
        raise UsageError(f"--save-state {path} was made while the run trained: it is not overwritten") from None


def run_training(
    trainer: Adapter,
    config: RunConfig,
    state_path: Path | None = None,
    profile_dir: Path | None = None,
    profiler: str | None = None,
    compiler: str | None = None,
    loader: str | None = None,
    step_clock: Clock = time.perf_counter,
    host_decoder: str | None = None,
) -> RunResult | None:
    """Set up, train (`config.job.steps` steps, or `config.job.epochs` epochs validating after each), evaluate, close.

    The primary process gets the result. With `config.job.profile_steps` and a `profile_dir`, that
    many more steps, clocked apart from the timed ones, run under the framework's profiler
    (`profiler`, None where the registry declares none) after the timed ones; `--epochs` runs
    have no such window (the steps after the last epoch would restart the loader). `compiler`
    names what compiles the step (None: nothing), which puts the compile step before the timed ones.
    `loader` names the adapter's native loader, recorded on rows of real data. After the last of
    `config.job.epochs` epochs the test split is scored once (`test_metrics`), apart from the time to train.
    `step_clock` is the host clock the timed steps are read on (tests hand in a scripted one).
    Rows of real data name what decoded the images: the adapter's decoder where it decodes off
    the host (`ModelInfo.decoder`), else `host_decoder`, the loader workers' own.
    """
    launched = launch_time()
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    info = trainer.setup(config)
    placement = trainer.placement
    first_step_at = time.time()
    epoch_metrics: list[dict[str, float]] = []
    test_metrics: dict[str, float] = {}
    time_to_train = None
    target_figures: dict[str, Any] = {}
    profile, profile_seconds = None, None
    if config.job.epochs:
        trained = train_epochs(trainer, config, compiler is not None, step_clock)
        clock, epoch_metrics, time_to_train = trained.clock, trained.epoch_metrics, trained.time_to_train_seconds
        if config.job.target_metric:
            target_figures = trained.target_figures(first_step_at - launched)
        test_metrics = trainer.evaluate("test")
    else:
        clock = StepClock(trainer, config, config.job.steps, compiling=compiler is not None, clock=step_clock)
        batches = trainer.batches()
        while clock.steps_taken < config.job.steps:
            clock.step(batches)
        clock.finish()
    stats = summarise_steps(clock.step_seconds, clock.waits, config.global_batch)
    epoch_rate = None
    if config.job.epochs:
        trained_steps = len(clock.step_seconds) + (clock.compile_seconds is not None)
        epoch_rate = trained_steps * config.global_batch / time_to_train
        metrics = trained.last_validation
        eval_seconds = sum(row["val_seconds"] for row in epoch_metrics)
    else:
        if config.job.profile_steps and profile_dir is not None:
            timed = TimedStep(stats.median_step_seconds, stats.input_wait_fraction * stats.median_step_seconds)
            window_start = time.perf_counter()
            window = StepClock(trainer, config, config.job.profile_steps, progress=False, synchronised=True)
            profile = profile_window(
                trainer, window, batches, config.job.profile_steps, profile_dir, placement.rank, profiler, timed
            )
            profile_seconds = time.perf_counter() - window_start
        closed(batches)
        eval_start = time.perf_counter()
        metrics = trainer.evaluate()
        eval_seconds = time.perf_counter() - eval_start
    if state_path is not None and placement.is_primary:
        save_state(trainer, state_path)
    peak = trainer.peak_memory_bytes()
    versions = trainer.framework_versions()
    trainer.close()
    if not placement.is_primary:
        return None
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
        init_digest=info.init_digest,
        attention_kernel=info.attention_kernel,
        startup_seconds=first_step_at - launched,
        compiler=compiler,
        compile_seconds=clock.compile_seconds,
        **dataclasses.asdict(stats),
        loader=None if config.job.dataset == "synthetic" else loader,
        decoder=None if config.job.dataset == "synthetic" else info.decoder or host_decoder,
        timing_method=clock.timing_method,
        host_breakdown=host_phase_shares(steady_window(clock.step_seconds).steady(clock.host_phases)),
        loader_workers=None
        if config.job.dataset == "synthetic"
        else loader_workers(config.job.workers, placement.world_size),
        eval_seconds=eval_seconds,
        eval_metrics=metrics,
        epoch_metrics=epoch_metrics,
        test_metrics=test_metrics,
        time_to_train_seconds=time_to_train,
        epoch_images_per_sec=epoch_rate,
        **target_figures,
        **clock.loss_figures(),
        peak_memory_bytes=peak,
        step_seconds=clock.step_seconds,
        input_wait_seconds=clock.waits,
        profile=profile,
        profile_seconds=profile_seconds,
    )
