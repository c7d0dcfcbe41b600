"""The training loop every framework runs through, so every number is taken the same way.

Per step: the next batch is taken (time blocked here is input wait), the adapter steps, the
step timer marks the step's end, and its loss is kept unread; the devices are synchronised and
the losses read once, at the end of the timed window, where the framework allows it
(`mgbench.measure.step_timer`: CUDA events time each step on the device's clock; frameworks
without device events synchronise after every step). Training in epochs
(`--epochs`, real data) runs the same clocked steps epoch by epoch, sets each step's learning
rate from the model's schedule (`core.optimization`: the linear scaling rule with warm-up, or
warm-up and cosine), and times validation apart from training. A run timed in `--steps` follows
the schedule too where it says so (`Schedule.schedules_steps`: a language model's warm-up and
cosine over the run's steps); otherwise it trains at `--lr` throughout. Start-up is measured
from the launch (the orchestrator passes its clock in MGBENCH_LAUNCH_TIME) or, for a bare
`mgbench run`, from this process's creation.

A run whose step is compiled (`--compile`, or a framework that always compiles) has one more
phase between start-up and warm-up: compilers compile at the first call (torch.compile, XLA),
so the run's first training step is its compile step, clocked on its own as `compile_seconds`
and kept out of the step series, so warm-up detection and throughput see compiled steps only.
`--steps N` still times N steps after it; with `--epochs` it is the first step of the first epoch.
Either way it is step 0 of the schedule.
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
from mgbench.core.objective import LOSS, METRICS
from mgbench.core.optimization import RatePlan
from mgbench.core.safe_files import new_file_by_writer
from mgbench.core.target import TargetMetric
from mgbench.machine.host import host_environment
from mgbench.measure.breakdown import TimedStep
from mgbench.measure.metrics import diverged
from mgbench.measure.phases import COMPILE, EVALUATION, PROFILE, WARMUP
from mgbench.measure.step_timer import Clock, StepTimer, step_sync_forced
from mgbench.measure.timing import host_phase_shares, steady_window, summarise_steps
from mgbench.records.figures import (
    Build,
    Compilation,
    EpochFigures,
    InputFigures,
    Origin,
    ProfileFigures,
    StepSeries,
    StepTiming,
)
from mgbench.records.results import RunResult, Status, fields_of
from mgbench.training.compile_cache import CacheState, CacheWatch
from mgbench.training.loaders import loader_workers
from mgbench.training.profiling import profile_window
from mgbench.training.protocol import Adapter

LAUNCH_TIME_ENV = "MGBENCH_LAUNCH_TIME"
PHASE_MARK = "phase: "
"""What starts the log line the primary process prints as a run enters a phase (`announce`):
`phase: compile`, then `warm-up`, `profile`, `evaluation` (`measure.phases`' names), read by the
live display of a compare. Steps print their own lines (`step N/M: ...`)."""
PROGRESS_EVERY_FRACTION = 0.1
STEP_LOSSES_KEPT = 10
"""The first training losses every row records (`step_losses`): the same-start check compares
them between frameworks."""


def announce(adapter: Adapter, phase: str) -> None:
    """One `PHASE_MARK` line in the run's log, from the primary process only."""
    if adapter.placement.is_primary:
        print(f"{PHASE_MARK}{phase}", file=sys.stderr, flush=True)


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
        adapter: Adapter,
        config: RunConfig,
        total_steps: int,
        progress: bool = True,
        compiles: bool = False,
        synchronised: bool = False,
        clock: Clock = time.perf_counter,
    ):
        self.adapter = adapter
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
        self.compile_ended: float | None = None
        """Epoch seconds when the compile step ended, for `CacheWatch.state` after the run."""
        self.compile_pending = compiles
        own = adapter.step_timer(clock)
        forced = synchronised or step_sync_forced()
        self.timer = StepTimer(adapter.synchronize, clock) if forced else own
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
            if not self.steps_taken and self.progress:
                announce(self.adapter, WARMUP)
            self.adapter.synchronize()
            self.timer.start()
            self.in_window, self.progress_mark = True, self.clock()
        t0 = self.clock()
        batch = next(batches)
        t1 = self.clock()
        self.adapter.train_step(batch)
        t2 = self.clock()
        self.timer.mark()
        t3 = self.clock()
        self.pending.append(self.adapter.pending_loss())
        t4 = self.clock()
        self.waits.append(t1 - t0)
        self.host_phases.append((t1 - t0, t2 - t1, t3 - t2, t4 - t3))
        done = self.steps_taken
        if self.progress and self.adapter.placement.is_primary and done % self.progress_every == 0:
            unit = self.config.job.input.unit  # the model's: img/s, or tokens/s for a language model
            rate = unit.of(self.config.global_batch * self.progress_every / (t4 - self.progress_mark))
            self.progress_mark = t4
            print(f"step {done}/{self.total_steps}: {rate:.1f} {unit.label} (host clock)", file=sys.stderr, flush=True)

    def _compile_step(self, batches: Iterator[Any]) -> None:
        """The first step of a compiled run, synchronised and clocked on its own, and when it ended
        (whether the compile caches served it is read after the run: `compile_cache.CacheWatch`)."""
        announce(self.adapter, COMPILE)
        t0 = self.clock()
        self.adapter.train_step(next(batches))
        self.adapter.synchronize()
        self.compile_seconds, self.compile_pending = self.clock() - t0, False
        self.compile_ended = time.time()
        self.compile_losses = self.adapter.read_losses([self.adapter.pending_loss()])
        if self.adapter.placement.is_primary:
            print(f"compile step: {self.compile_seconds:.1f} s", file=sys.stderr, flush=True)

    def finish(self) -> None:
        """End the window: synchronise once, then read the steps' times and losses."""
        if not self.in_window:
            return
        self.adapter.synchronize()
        self.step_seconds.extend(self.timer.step_seconds())
        self.losses.extend(self.adapter.read_losses(self.pending))
        self.pending, self.in_window = [], False

    def loss_figures(self) -> LossFigures:
        """The row's losses: every timed step's, the first `STEP_LOSSES_KEPT` (a compiled run's
        compile step first), the last, and the step (counted the same way) at which the loss was
        first no finite number, each loss from there on saying so (`metrics.diverged`)."""
        every, diverged_at = diverged(self.compile_losses + self.losses)
        losses = every[len(self.compile_losses) :]
        return LossFigures(losses, every[:STEP_LOSSES_KEPT], losses[-1], diverged_at)


@dataclasses.dataclass(frozen=True)
class LossFigures:
    """A row's losses (`StepClock.loss_figures`): null from the step they diverged at."""

    losses: list[float]
    step_losses: list[float]
    final_loss: float
    diverged_at_step: int | None


@dataclasses.dataclass(frozen=True)
class Trained:
    """What training gave, in steps (`train_steps`) or in epochs (`train_epochs`): the clock that
    timed its steps, the held-out metrics it ended with and their seconds, what only epochs give,
    the profiled window's summary and seconds, and the row's warnings."""

    clock: StepClock
    eval_metrics: dict[str, float]
    eval_seconds: float
    by_epoch: EpochFigures = dataclasses.field(default_factory=EpochFigures)
    profile: dict[str, Any] | None = None
    profile_seconds: float | None = None
    warnings: list[str] = dataclasses.field(default_factory=list)


def train_steps(
    adapter: Adapter,
    config: RunConfig,
    compiles: bool,
    step_clock: Clock,
    profile_dir: Path | None = None,
    profiler: str | None = None,
) -> Trained:
    """`config.job.steps` timed steps, then, with `config.job.profile_steps` and a `profile_dir`,
    that many more under the framework's `profiler`, clocked apart from the timed ones; then the
    held-out loss. `step_clock` times the steps; with `compiles` the first is the compile step, as
    in `run_training`. Where the model's schedule runs in steps (`schedules_steps`), each step,
    the compile step first, is set its rate over the run's steps; the profiled ones keep the last."""
    clock = StepClock(adapter, config, config.job.steps, compiles=compiles, clock=step_clock)
    schedule = config.job.spec.optimization.schedule
    total = config.job.steps + compiles
    rates = RatePlan(config.job.learning_rate, config.global_batch, config.job.lr_reference_batch, total, total)
    batches = adapter.batches()
    for step in range(total):
        if schedule.schedules_steps:
            adapter.set_learning_rate(schedule.rate_at(step, rates))
        clock.step(batches)
    clock.finish()
    profile, profile_seconds = None, None
    if config.job.profile_steps and profile_dir is not None:
        stats = summarise_steps(clock.step_seconds, clock.waits, config.global_batch)
        timed = TimedStep(stats.median_step_seconds, stats.input_wait_fraction * stats.median_step_seconds)
        announce(adapter, PROFILE)
        window_start = time.perf_counter()
        window = StepClock(adapter, config, config.job.profile_steps, progress=False, synchronised=True)
        rank = adapter.placement.rank
        profile = profile_window(adapter, window, batches, config.job.profile_steps, profile_dir, rank, profiler, timed)
        profile_seconds = time.perf_counter() - window_start
    closed(batches)
    announce(adapter, EVALUATION)
    eval_start = time.perf_counter()
    metrics = adapter.evaluate()
    eval_seconds = time.perf_counter() - eval_start
    return Trained(clock, metrics, eval_seconds, profile=profile, profile_seconds=profile_seconds)


def train_epochs(
    adapter: Adapter, config: RunConfig, epochs: int, compiles: bool, step_clock: Clock, startup: float
) -> Trained:
    """The job's `epochs` epochs at the model's schedule of learning rates and validation after each;
    with `config.job.target_metric`, only up to the first epoch whose validation reaches it, whose
    time is taken from the first training step and, with `startup` seconds, from the launch. Every
    process stops alike: each is handed the same gathered validation (`Adapter.evaluate`). After
    the last epoch the test split is scored once, apart from the time to train. `step_clock` times
    the steps; with `compiles` the first is the compile step, as in `run_training`."""
    target = TargetMetric.parse(config.job.target_metric) if config.job.target_metric else None
    per_epoch = adapter.steps_per_epoch()
    job = config.job
    rates = RatePlan(job.learning_rate, config.global_batch, job.lr_reference_batch, per_epoch, per_epoch * epochs)
    clock = StepClock(adapter, config, per_epoch * epochs, compiles=compiles, clock=step_clock)
    epoch_metrics: list[dict[str, float]] = []
    target_epoch = None
    started = time.perf_counter()
    for epoch in range(epochs):
        row, metrics = train_epoch(adapter, config, clock, epoch, rates)
        epoch_metrics.append({**row, "elapsed_seconds": time.perf_counter() - started})
        if target is not None and target.reached(metrics):
            target_epoch = epoch + 1
        if adapter.placement.is_primary:
            row = epoch_metrics[-1]
            print(
                f"epoch {epoch + 1}/{epochs}: train loss {row['train_loss']:.4f}, {shown_validation(metrics)} "
                f"({row['val_seconds']:.1f} s)" + (f": target {target} reached" if target_epoch else ""),
                file=sys.stderr,
                flush=True,
            )
        if target_epoch:
            break
    time_to_train = time.perf_counter() - started
    warnings = []
    if target is not None and target_epoch is None:
        shown = metrics.get(target.name, float("nan"))
        warnings.append(f"target {target} not reached in {epochs} epoch(s) (last validation {target.name} {shown:.4f})")
    reached = None if target_epoch is None else epoch_metrics[target_epoch - 1]["elapsed_seconds"]
    trained_steps = len(clock.step_seconds) + (clock.compile_seconds is not None)
    by_epoch = EpochFigures(
        epoch_metrics=epoch_metrics,
        test_metrics=adapter.evaluate("test"),
        time_to_train_seconds=time_to_train,
        epoch_samples_per_sec=trained_steps * config.global_batch / time_to_train,
        time_to_target_seconds=reached,
        time_to_target_with_startup_seconds=None if reached is None else startup + reached,
        target_epoch=target_epoch,
    )
    eval_seconds = sum(row["val_seconds"] for row in epoch_metrics)
    return Trained(clock, metrics, eval_seconds, by_epoch=by_epoch, warnings=warnings)


def shown_validation(metrics: dict[str, float]) -> str:
    """A validation's figures as the epoch's progress line shows them: its loss, then each metric
    of the model's objective it gave (`objective.METRICS`: AUC and top-1, or perplexity)."""
    shown = [f"val loss {metrics['loss']:.4f}"]
    shown += [
        f"val {METRICS[name].label} {value:.4f}"
        for name, value in metrics.items()
        if name in METRICS.keys() - {LOSS.name}
    ]
    return ", ".join(shown)


def train_epoch(
    adapter: Adapter, config: RunConfig, clock: StepClock, epoch: int, rates: RatePlan
) -> tuple[dict[str, float], dict[str, float]]:
    """One epoch's clocked steps, each at the rate the model's schedule gives it (`rates`: the
    run's), then its validation: the epoch's row (its figures and its validation metrics,
    prefixed `val_`) and the validation metrics."""
    batches = adapter.epoch_batches(epoch)
    first = len(clock.step_seconds)
    schedule = config.job.spec.optimization.schedule
    for step in range(rates.steps_per_epoch):
        adapter.set_learning_rate(schedule.rate_at(epoch * rates.steps_per_epoch + step, rates))
        clock.step(batches)
    clock.finish()
    announce(adapter, EVALUATION)
    val_start = time.perf_counter()
    metrics = adapter.evaluate("val")
    val_seconds = time.perf_counter() - val_start
    train_seconds = float(sum(clock.step_seconds[first:]))
    row = {
        "epoch": epoch + 1,
        "train_loss": float(np.mean(clock.losses[first:])),
        "train_seconds": train_seconds,
        "samples_per_sec": len(clock.step_seconds[first:]) * config.global_batch / train_seconds,
        **{f"val_{name}": value for name, value in metrics.items()},
        "val_seconds": val_seconds,
    }
    return row, metrics


def closed(feed: Iterator[Any]) -> None:
    """Ends `feed` where it can be ended (its `close`: a generator's, a staged feed's): the thread
    that fills it stops and lets go of the loader it reads, whose workers the adapter's `close`
    can then end."""
    close = getattr(feed, "close", None)
    if close is not None:
        close()


def save_state(adapter: Adapter, path: Path) -> None:
    """The trained weights as the new file `path` (`run --save-state`, checked free before the run):
    written beside it and linked to the name, so that a file made there meanwhile is not replaced
    (one UsageError), nor a link planted there written through."""
    try:
        with new_file_by_writer(path) as temporary:
            adapter.save_state(temporary)
    except FileExistsError:
        raise UsageError(f"--save-state {path} was made while the run trained: it is not overwritten") from None


def served_compile(watch: CacheWatch | None, clock: StepClock) -> CacheState | None:
    """Whether the compile caches served the run's compile step, read after the run (`watch`: the
    caches as they were before it; None where nothing compiled or on a process that is not the
    primary)."""
    if watch is None or clock.compile_ended is None:
        return None
    return watch.state(clock.compile_ended)


def run_training(
    adapter: Adapter,
    config: RunConfig,
    state_path: Path | None = None,
    profile_dir: Path | None = None,
    profiler: str | None = None,
    compiler: str | None = None,
    loader: str | None = None,
    step_clock: Clock = time.perf_counter,
    host_decoder: str | None = None,
) -> RunResult | None:
    """Set up, train (`train_steps`, or with `config.job.epochs` `train_epochs`), save, close.

    The primary process gets the result. `profiler` names the framework's profiler (None where the
    registry declares none) for a window in `profile_dir`; `--epochs` runs have no such window (the
    steps after the last epoch would restart the loader). `compiler` names what compiles the step
    (None: nothing), which puts the compile step before the timed ones; the primary process lists
    the compile caches once after setup and once after the run, outside every timed span, to say
    whether they served that step (`compile_cache.CacheWatch`). `loader` names the
    adapter's native loader, recorded on rows of real data. `step_clock` is the host clock the
    timed steps are read on (tests hand in a scripted one). Rows of real data name what decoded
    the images: the adapter's decoder where it decodes off the host (`ModelInfo.decoder`), else
    `host_decoder`, the loader workers' own.
    """
    launched = launch_time()
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    compiles = compiler is not None
    info = adapter.setup(config)
    placement = adapter.placement
    first_step_at = time.time()
    watch = CacheWatch.start() if compiles and placement.is_primary else None
    if epochs := config.job.epochs:
        trained = train_epochs(adapter, config, epochs, compiles, step_clock, first_step_at - launched)
    else:
        trained = train_steps(adapter, config, compiles, step_clock, profile_dir, profiler)
    if state_path is not None and placement.is_primary:
        save_state(adapter, state_path)
    elif state_path is not None:
        adapter.share_state()
    peak, reserved = adapter.peak_memory_bytes(), adapter.peak_reserved_bytes()
    versions = adapter.framework_versions()
    adapter.close()
    if not placement.is_primary:
        return None
    clock = trained.clock
    served = served_compile(watch, clock)
    stats = summarise_steps(clock.step_seconds, clock.waits, config.global_batch)
    real = config.job.dataset != "synthetic"
    losses = clock.loss_figures()
    return RunResult(
        config=config,
        status=Status.OK,
        origin=Origin(
            interpreter=sys.executable,
            started_at=started_at,
            wall_seconds=time.time() - launched,
            environment=host_environment(),
            framework_versions=versions,
            device_names=placement.device_names,
        ),
        build=Build(parameters=info.parameters, init_digest=info.init_digest, attention_kernel=info.attention_kernel),
        startup_seconds=first_step_at - launched,
        compiled=Compilation(compiler, clock.compile_seconds, served),
        timing=StepTiming(**{name: getattr(stats, name) for name in fields_of(StepTiming)}),
        input=InputFigures(
            input_wait_fraction=stats.input_wait_fraction,
            loader=loader if real else None,
            loader_workers=loader_workers(config.job.workers, placement.world_size) if real else None,
            decoder=info.decoder or host_decoder if real else None,
        ),
        train_seconds=stats.train_seconds,
        eval_seconds=trained.eval_seconds,
        eval_metrics=trained.eval_metrics,
        by_epoch=trained.by_epoch,
        final_loss=losses.final_loss,
        diverged_at_step=losses.diverged_at_step,
        timing_method=clock.timing_method,
        window_seconds=stats.window_seconds,
        host_breakdown=host_phase_shares(steady_window(clock.step_seconds).steady(clock.host_phases)),
        profiled=ProfileFigures(profile=trained.profile, profile_seconds=trained.profile_seconds),
        peak_memory_bytes=peak,
        peak_memory_reserved_bytes=reserved,
        series=StepSeries(clock.step_seconds, clock.waits, losses.losses, losses.step_losses),
        warnings=trained.warnings,
    )
