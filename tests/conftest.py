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
