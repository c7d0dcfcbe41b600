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


def framework_python(framework: str) -> str:
    """The framework's own interpreter (`make env-NAME`), or skip the test saying it is not built."""
    from mgbench.common.environments import inspect_installation
    from mgbench.frameworks import framework_spec

    spec = framework_spec(framework)
    found = inspect_installation(spec)
    if not found.installed:
        pytest.skip(f"{framework} is not installed (missing {', '.join(found.missing)}): {spec.install_hint}")
    return found.interpreter


def run_in(python: str, code: str, timeout: float = 600) -> str:
    """Run `code` in another interpreter with this checkout's mgbench importable; returns stdout."""
    env = cli_env(PYTHONPATH=os.pathsep.join(filter(None, [str(TESTS.parent), os.environ.get("PYTHONPATH", "")])))
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=timeout, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout
