"""Shared helpers: run the CLI as users do (a subprocess), with the fake adapter registered."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent


def cli_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TESTS), env.get("PYTHONPATH", "")]))
    env["MGBENCH_PLUGINS"] = "fakefw"
    env.update(extra)
    return env


def mgbench(*args: str, timeout: float = 600, **extra_env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mgbench", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=cli_env(**extra_env),
    )


@pytest.fixture
def fake_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    """Register the fake adapter in this process too."""
    monkeypatch.syspath_prepend(str(TESTS))
    monkeypatch.setenv("MGBENCH_PLUGINS", "fakefw")


def saved_state(tmp_path: Path, name: str, framework: str, strategy: str, gpus: int, batch: int, lr: float,
                device: str = "cpu") -> dict:
    """Weights after one step of `mgbench run` on the tiny model (the framework's environment runs it)."""
    path = tmp_path / f"{name}.npz"
    done = mgbench(
        "run", "--framework", framework, "--strategy", strategy, "--gpus", str(gpus), "--model", "tiny",
        "--batch-per-gpu", str(batch), "--steps", "1", "--lr", str(lr), "--device", device,
        "--save-state", str(path), "--out", str(tmp_path / name),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return load_state(path)


def load_state(path: Path) -> dict:
    """Weights written by `mgbench run --save-state` (.npz of named arrays)."""
    import numpy as np

    with np.load(path) as state:
        return {k: state[k] for k in state.files}


def max_difference(a: dict, b: dict) -> float:
    assert a.keys() == b.keys()
    return max(float(abs(a[k] - b[k]).max()) for k in a)
