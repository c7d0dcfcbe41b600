"""Helpers for tests of frameworks that live in their own environment (`.venvs/<env>`).

Such tests run the framework through the CLI as users do; without the environment they skip,
naming the command that builds it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import mgbench
from mgbench.common.launch import environment_python
from mgbench.frameworks import framework_spec


def own_python(framework: str) -> Path:
    """The framework environment's interpreter, or skip the test saying how to build it."""
    spec = framework_spec(framework)
    python = environment_python(spec)
    if not python.exists():
        pytest.skip(f"{framework} needs its environment {python.parent.parent}: run `make env-{framework}`")
    return python


def trained_state(folder: Path, framework: str, strategy: str, gpus: int, batch: int, lr: float, steps: int = 2,
                  data_format: str = "channels_last", precision: str = "fp32") -> dict[str, np.ndarray]:
    """Weights after `steps` steps of a `tiny` run on `gpus` CPU devices (global batch gpus * batch).

    Runs are named by everything that defines them, so one already in `folder` is reused."""
    own_python(framework)
    name = f"{framework}-{strategy}-{gpus}x{batch}-lr{lr}-{steps}steps-{data_format}-{precision}"
    path = folder / f"{name}.npz"
    if path.exists():
        with np.load(path) as state:
            return {k: state[k] for k in state.files}
    done = mgbench(
        "run", "--framework", framework, "--strategy", strategy, "--gpus", str(gpus), "--model", "tiny",
        "--batch-per-gpu", str(batch), "--steps", str(steps), "--lr", str(lr), "--device", "cpu",
        "--data-format", data_format, "--precision", precision, "--save-state", str(path), "--out", str(folder / name),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    with np.load(path) as state:
        return {k: state[k] for k in state.files}


def max_difference(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> float:
    assert sorted(a) == sorted(b)
    return max(float(np.abs(a[k] - b[k]).max()) for k in a)
