"""The `Trainer` protocol: the only surface a framework adapter implements.

The common driver (`mgbench.common.driver`) owns the loop, the clocks and the result, so an
adapter holds framework code only: build, feed, step, synchronise, evaluate, close. Keeping
timing out of adapters is what makes their numbers comparable.
"""

from __future__ import annotations

import resource
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Protocol, runtime_checkable

from mgbench.common.config import RunConfig
from mgbench.common.errors import UsageError


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
    """What `setup` built: trainable parameter count (checked equal across frameworks)."""

    parameters: int


@runtime_checkable
class Trainer(Protocol):
    def setup(self, config: RunConfig) -> ModelInfo:
        """Join the process group if any, build model, loss and optimizer for `config`."""
        ...

    @property
    def placement(self) -> Placement:
        """Valid after `setup`."""
        ...

    def batches(self) -> Iterator[Any]:
        """The training input pipeline: an endless iterator of batches ready for `train_step`.

        The time `next()` takes is what the driver reports as input wait, so an adapter that
        prefetches to the device hides it and one that feeds synchronously shows it.
        """
        ...

    def train_step(self, batch: Any) -> None:
        """Forward, loss, backward, gradient exchange and optimizer update for one batch."""
        ...

    def synchronize(self) -> None:
        """Block until every device this process drives has finished its queued work."""
        ...

    def last_loss(self) -> float:
        """The training loss of the last step (global mean where the strategy exchanges it)."""
        ...

    def evaluate(self) -> dict[str, float]:
        """Metrics on held-out data, timed separately from training."""
        ...

    def peak_memory_bytes(self) -> int | None:
        """Peak device memory (host RSS on CPU) of this process, None where unknown."""
        ...

    def framework_versions(self) -> dict[str, str]:
        """Versions of the framework and libraries that shape performance (CUDA, cuDNN, NCCL)."""
        ...

    def save_state(self, path: Path) -> None:
        """Write trainable weights as an .npz of named float arrays (equivalence checks)."""
        ...

    def close(self) -> None:
        """Leave the process group and free devices."""
        ...


@runtime_checkable
class EpochTrainer(Trainer, Protocol):
    """What an adapter adds to train whole epochs of a real dataset (`--epochs`).

    The driver still owns the loop and the clocks: it asks how many steps an epoch has,
    sets the learning rate of each step (`mgbench.common.schedule`), and calls `evaluate`
    after each epoch, which on real data returns `loss` and `auc` over the whole validation
    split (each process scoring its shard, the predictions gathered before the AUC).
    """

    def steps_per_epoch(self) -> int:
        """Whole global batches in one epoch of the training split."""
        ...

    def epoch_batches(self, epoch: int) -> Iterator[Any]:
        """This process's shard of every global batch of epoch `epoch`, ready for `train_step`."""
        ...

    def set_learning_rate(self, learning_rate: float) -> None:
        """Used for the following steps."""
        ...


class AdapterBase:
    """What every adapter starts with: its strategy, checked against the ones it implements,
    and the placement `setup` fills in; plus the check of which precisions and layouts it trains.
    """

    framework: str = ""
    strategies: tuple[str, ...] = ()
    precisions: tuple[str, ...] = ("fp32", "bf16", "fp16")
    data_formats: tuple[str, ...] = ("channels_first", "channels_last")

    def __init__(self, strategy: str):
        if self.strategies and strategy not in self.strategies:
            raise UsageError(f"the {self.framework} adapter has no strategy {strategy!r}")
        self.strategy = strategy
        self._placement = Placement(rank=0, world_size=1)

    @property
    def placement(self) -> Placement:
        return self._placement

    def peak_memory_bytes(self) -> int | None:
        """Peak device memory on CUDA (what `peak_device_memory_bytes` reports), else this
        process's peak resident host memory: the same rule for every adapter."""
        if self.config.device_kind == "cuda":
            return self.peak_device_memory_bytes()
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    def peak_device_memory_bytes(self) -> int | None:
        """The most any of this process's devices held; None where the framework does not say."""
        return None

    def accept(self, config: RunConfig) -> None:
        """What `setup` starts with: the job checked, kept, and whether it runs on CUDA."""
        self.check_supported(config)
        self.config = config
        self.use_cuda = config.device_kind == "cuda"

    def check_supported(self, config: RunConfig) -> None:
        """Fail clearly, before building anything, on a job this framework cannot train."""
        if config.precision not in self.precisions:
            raise UsageError(f"the {self.framework} adapter trains in {', '.join(self.precisions)} only, not {config.precision}")
        if config.data_format not in self.data_formats:
            raise UsageError(f"the {self.framework} adapter supports {', '.join(self.data_formats)} only")
        if config.dataset != "synthetic" and not isinstance(self, EpochTrainer):
            # Reading a real dataset is what an EpochTrainer adds; without it the adapter would
            # train on its synthetic pool under the real dataset's name.
            raise UsageError(f"the {self.framework} adapter cannot read dataset {config.dataset!r}")
