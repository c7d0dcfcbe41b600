"""A framework adapter with no framework: scripted step times and faults, for driver/compare tests.

Registered through MGBENCH_PLUGINS=fakefw (with tests/ on PYTHONPATH). Its strategies say
what it does: `steady` trains (slow first steps, then steady), `crash` raises mid-run, `hang`
never finishes a step, `oom` dies the way an out-of-memory run dies, `oom-above` does so only
with more than OOM_ABOVE_BATCH samples per device, `oom-banner` too, as Keras over PyTorch under
torchrun dies (Keras' own first line on torch's error, then torchrun's banner), `slow` takes SLOW_STEP_SECONDS per step
(to be interrupted), `flaky` crashes while the environment has FAKE_FAIL=1 (to be resumed),
`diverge` trains but its loss is NaN from step DIVERGE_STEP on (a learning rate too high).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from mgbench.core.collectives import gradient_all_reduce
from mgbench.core.config import RunConfig
from mgbench.core.models import MODELS
from mgbench.frameworks.specs import Capabilities, Compiler, FrameworkSpec, ModelBuilders, StrategySpec
from mgbench.training.protocol import Adapter, ModelInfo, Placement

WARMUP_STEPS = 3
WARMUP_SECONDS = 0.12
STEP_SECONDS = 0.02
INPUT_SECONDS = 0.005
OOM_ABOVE_BATCH = 4
SLOW_STEP_SECONDS = 1.0
DIVERGE_STEP = 2

FRAMEWORK = FrameworkSpec(
    name="fake",
    module="fakefw",
    strategies=(
        StrategySpec(
            "steady",
            "inprocess",
            "slow first steps, then steady",
            communication=gradient_all_reduce("a replicated model, its gradients all-reduced as DDP does"),
        ),
        StrategySpec("crash", "inprocess", "raises at step 2"),
        StrategySpec("hang", "inprocess", "never finishes a step"),
        StrategySpec("oom", "inprocess", "dies of out-of-memory"),
        StrategySpec("oom-above", "inprocess", f"dies of out-of-memory above {OOM_ABOVE_BATCH} per device"),
        StrategySpec("oom-banner", "inprocess", f"dies under a launcher's banner above {OOM_ABOVE_BATCH} per device"),
        StrategySpec("slow", "inprocess", f"{SLOW_STEP_SECONDS} s per step"),
        StrategySpec("flaky", "inprocess", "crashes while FAKE_FAIL=1"),
        StrategySpec("diverge", "inprocess", f"its loss is NaN from step {DIVERGE_STEP} on"),
    ),
    import_names=("numpy",),
    environment="fake",
    install_hint="nothing to install",
    capabilities=Capabilities(
        ModelBuilders("fakefw", tuple(MODELS)),
        precisions=("fp32",),
        data_formats=("channels_first", "channels_last"),
        compiler=Compiler("fake-jit"),
    ),
)
WRAPPED_OOM = (
    "[rank0]: Traceback (most recent call last):",
    '[rank0]:   File "train.py", line 7, in train_step',
    "[rank0]: RuntimeError: Exception encountered when calling Functional.call().",
    "[rank0]: ",
    "[rank0]: CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacity of 79.19 GiB",
    "[rank0]: ",
    "[rank0]: Arguments received by Functional.call():",
)
"""How Keras over PyTorch reports torch's out-of-memory error: its own first line, with the
exception's type lost (Keras' fallback), and torch's text below it."""
LAUNCHER_BANNER = (
    "E1206 torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: 1) local_rank: 0",
    "Traceback (most recent call last):",
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
    "============================================================",
    "train.py FAILED",
    "------------------------------------------------------------",
    "Failures:",
    "  <NO_OTHER_FAILURES>",
    "Root Cause (first observed failure):",
    "[0]:",
    "  exitcode  : 1 (pid: 1234)",
    "  error_file: <N/A>",
)
BANNER_LINES = 60
"""Lines of launcher output after the worker's error: more than a run's log tail holds."""
PARAMETERS = 1234
"""The fake's models, every one of them: a parameter count, whatever the catalogue entry."""


class FakeAdapter(Adapter):
    def __init__(self, strategy: str):
        super().__init__(strategy)
        self.steps_done = 0

    @property
    def placement(self) -> Placement:
        return Placement(rank=0, world_size=1, device_names=["fake"])

    def setup(self, config: RunConfig) -> ModelInfo:
        self.config = config
        return ModelInfo(parameters=PARAMETERS)

    def batches(self) -> Iterator[int]:
        while True:
            time.sleep(INPUT_SECONDS)
            yield self.steps_done

    def train_step(self, batch: int) -> None:
        if self.strategy == "crash" and self.steps_done == 2:
            raise RuntimeError("fake adapter crashed on purpose")
        if self.strategy == "hang":
            time.sleep(3600)
        if self.strategy == "oom" or (
            self.strategy == "oom-above" and self.config.job.batch_per_device > OOM_ABOVE_BATCH
        ):
            raise MemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")
        if self.strategy == "oom-banner" and self.config.job.batch_per_device > OOM_ABOVE_BATCH:
            banner = [LAUNCHER_BANNER[n % len(LAUNCHER_BANNER)] for n in range(BANNER_LINES)]
            print("\n".join([*WRAPPED_OOM, *banner]), flush=True)
            os._exit(1)
        if self.strategy == "flaky" and os.environ.get("FAKE_FAIL") == "1":
            raise RuntimeError("flaky fake adapter failed on purpose")
        if self.strategy == "slow":
            time.sleep(SLOW_STEP_SECONDS)
        time.sleep(WARMUP_SECONDS if self.steps_done < WARMUP_STEPS else STEP_SECONDS)
        self.steps_done += 1

    def synchronize(self) -> None:
        return None

    def last_loss(self) -> float:
        if self.strategy == "diverge" and self.steps_done >= DIVERGE_STEP:
            return float("nan")
        return 1.0 / (1 + self.steps_done)

    def evaluate(self, split: str = "val") -> dict[str, float]:
        return {"loss": 0.5}

    def peak_memory_bytes(self) -> int | None:
        return 2**20

    def framework_versions(self) -> dict[str, str]:
        return {"fake": "1.0"}

    def save_state(self, path: Path) -> None:
        np.savez(path, steps=np.array([self.steps_done]))

    def close(self) -> None:
        return None


def create_adapter(strategy: str) -> FakeAdapter:
    return FakeAdapter(strategy)
