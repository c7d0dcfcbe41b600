"""`Adapter`: the only surface a framework adapter implements.

The shared driver (`mgbench.training.driver`) owns the loop, the clocks and the result, so an
adapter holds framework code only: build, feed, step, synchronise, evaluate, close. Keeping
timing out of adapters is what makes their numbers comparable.
"""

from __future__ import annotations

import resource
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mgbench.core.config import RunConfig
from mgbench.measure.step_timer import Clock, StepTimer


@dataclass(frozen=True)
class Placement:
    """Where this process sits in the job: its rank, how many processes, which devices it drives."""

    rank: int
    world_size: int
    device_names: list[str] = field(default_factory=list)

    @property
    def is_primary(self) -> bool:
        """Only the primary process writes the result (all ranks step in lock-step)."""
        return self.rank == 0


@dataclass(frozen=True)
class ModelInfo:
    """What `setup` built: trainable parameter count (checked equal across frameworks), the
    digest of the initial weights it started from (None: the framework's own initialiser), and
    the kernel its attention runs in (None: a model without attention)."""

    parameters: int
    init_digest: str | None = None
    attention_kernel: str | None = None
    decoder: str | None = None
    """What decodes the real dataset's images and where the crop runs, where the adapter decodes
    off the host (`--decode gpu`); None: the loader's workers decode (the worker names them)."""


@dataclass(frozen=True)
class OpTime:
    name: str
    self_seconds: float
    calls: int


class Adapter:
    """The one contract between the driver and a framework: what every adapter implements.

    The driver calls `setup`, then `batches` / `train_step` / `pending_loss` per step with the
    `step_timer`'s marks, `synchronize` and `read_losses` at the end of the window, `evaluate`,
    `save_state` where asked (`share_state` on the other processes), and `close`. What an
    adapter may add is declared in the registry's capabilities, not probed here: a real-data
    loader (`steps_per_epoch`, `epoch_batches`, `set_learning_rate`) and a profiler (`profile`).
    The methods below that raise are those optional ones, or ones every adapter must override;
    the contract test checks each registered adapter against its declared capabilities.
    """

    def __init__(self, strategy: str):
        self.strategy = strategy
        self._placement = Placement(rank=0, world_size=1)

    def setup(self, config: RunConfig) -> ModelInfo:
        """Join the process group if any, build model, loss and optimizer for `config`."""
        raise NotImplementedError

    @property
    def placement(self) -> Placement:
        """Valid after `setup`."""
        return self._placement

    def accept(self, config: RunConfig) -> None:
        """What `setup` starts with: the job kept, and whether it runs on CUDA. (Whether the
        adapter can train it at all was decided from the registry before it was created.)"""
        self.config = config
        self.use_cuda = config.job.device_kind.on_gpu

    def batches(self) -> Iterator[Any]:
        """The training input pipeline: an endless iterator of batches ready for `train_step`.

        The time `next()` takes is what the driver reports as input wait, so an adapter that
        prefetches to the device hides it and one that feeds synchronously shows it. Once the
        timed and profiled steps are done the driver closes the iterator where it has a `close`
        (a generator's, or a feed's that stages batches on a thread), before `close`.
        """
        raise NotImplementedError

    def train_step(self, batch: Any) -> None:
        """Forward, loss, backward, gradient exchange and optimizer update for one batch."""
        raise NotImplementedError

    def synchronize(self) -> None:
        """Block until every device this process drives has finished its queued work."""
        raise NotImplementedError

    def last_loss(self) -> float:
        """The training loss of the last step (global mean where the strategy exchanges it)."""
        raise NotImplementedError

    def pending_loss(self) -> Any:
        """The last step's loss as the framework holds it, for `read_losses` after the window.
        By default read at once (`last_loss`); adapters whose loss stays on the device return
        it unread, so no step waits for the device to hand it back."""
        return self.last_loss()

    def read_losses(self, pending: list[Any]) -> list[float]:
        """The window's `pending_loss` values as floats (global means), read once after it."""
        return [float(value) for value in pending]

    def step_timer(self, clock: Clock) -> StepTimer:
        """How the driver times steps without synchronising where the framework can
        (`step_timer` module); by default each step is synchronised and clocked by the host."""
        return StepTimer(self.synchronize, clock)

    def evaluate(self, split: str = "val") -> dict[str, float]:
        """Metrics on held-out data, timed separately from training. On real data, over the whole
        `split` (`val` after each epoch, `test` after the last): `loss` and
        `metrics.split_metrics` (`auc`, and `top1` for class folders), each process scoring its
        shard, gathered (`metrics.gathered_metrics`). On synthetic data `split` is not used: the
        loss of a held-out batch."""
        raise NotImplementedError

    def peak_memory_bytes(self) -> int | None:
        """Peak device memory on CUDA (what `peak_device_memory_bytes` reports), else this
        process's peak resident host memory: the same rule for every adapter."""
        if self.config.job.device_kind.on_gpu:
            return self.peak_device_memory_bytes()
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    def peak_device_memory_bytes(self) -> int | None:
        """The most any of this process's devices held; None where the framework does not say."""
        return None

    def peak_reserved_bytes(self) -> int | None:
        """Peak device memory the framework's allocator reserved on CUDA (what
        `peak_device_reserved_bytes` reports); None on CPU devices, where no allocator of the
        framework's own holds the host's memory."""
        return self.peak_device_reserved_bytes() if self.config.job.device_kind.on_gpu else None

    def peak_device_reserved_bytes(self) -> int | None:
        """The most memory the framework's allocator held from any of this process's devices,
        allocated or cached for reuse (at least `peak_device_memory_bytes`): what the device had
        to have free. None where the framework does not say."""
        return None

    def framework_versions(self) -> dict[str, str]:
        """Versions of the framework and libraries that shape performance (CUDA, cuDNN, NCCL)."""
        raise NotImplementedError

    def save_state(self, path: Path) -> None:
        """Write trainable weights as an .npz of named float arrays (equivalence checks). The
        primary process writes them while every other calls `share_state`."""
        raise NotImplementedError

    def share_state(self) -> None:
        """What a process other than the primary does while the primary saves the state: where
        the strategy shards the weights, hand its shards to the primary's `save_state` (a
        collective). By default nothing: each process holds them whole."""

    def close(self) -> None:
        """Leave the process group, free devices, and end the loaders' worker processes: in the
        run, not at the interpreter's exit, where a framework may wait on each of them."""

    def steps_per_epoch(self) -> int:
        """Real data: whole global batches in one epoch of the training split."""
        raise NotImplementedError(f"{type(self).__name__} has no real-data loader")

    def epoch_batches(self, epoch: int) -> Iterator[Any]:
        """Real data: this process's shard of every global batch of `epoch`, ready for `train_step`."""
        raise NotImplementedError(f"{type(self).__name__} has no real-data loader")

    def set_learning_rate(self, learning_rate: float) -> None:
        """The rate of the following steps, from the model's schedule (`core.optimization`): owed
        where the driver schedules, in the epochs of real data and, for a model whose schedule runs
        in steps (`Schedule.schedules_steps`: a language model's), at every step of a `--steps` run."""
        raise NotImplementedError(f"{type(self).__name__} sets no learning rate")

    def profile(self, run_steps: Callable[..., None], trace_path: Path) -> None:
        """`run_steps(mark)` under the framework's profiler: a Chrome trace at `trace_path`, which
        the profiler's reader (`trace_events.TRACE_READERS`) turns into ops and a breakdown.

        `mark` is the profiler's span marker (`torch.profiler.record_function`,
        `jax.profiler.TraceAnnotation`) as a callable returning a context manager for a span
        named `trace_events.STEP_MARK`: each step runs inside one, so the trace itself says where
        the steps begin and end. Called without it the window is taken from the host's clock."""
        raise NotImplementedError(f"{type(self).__name__} has no profiler")
