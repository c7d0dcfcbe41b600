"""Shared helpers: run the CLI as users do (a subprocess), with the fake adapter registered."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import psutil
import pytest

if TYPE_CHECKING:
    from mgbench.records.results import RunResult

TESTS = Path(__file__).resolve().parent
BENCHMARKS = TESTS.parent / "benchmarks"
SCRIPTS = TESTS.parent / "scripts"


def benchmark_script(name: str, folder: Path = BENCHMARKS) -> ModuleType:
    """`benchmarks/<name>.py` (or `folder`'s) as a module: the scripts are not a package, and the
    figures BENCHMARKS.md quotes come from their functions."""
    spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def interruptible() -> None:
    """Popen's preexec_fn for a child to be interrupted: SIGINT back to its default, which the
    child's Python turns into KeyboardInterrupt, as in a terminal. (A shell's background job,
    and so a test run started as one, passes SIGINT on ignored.)"""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


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


def one_line_error(done: subprocess.CompletedProcess) -> str:
    """The one line `mgbench: error: ...` a refused command prints, having exited 2."""
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mgbench: error: "), done.stderr
    return lines[0]


def append_result(path: Path, result: RunResult) -> None:
    """Add one `RunResult` to a results file as it stands: no figure of it is finished
    (`records.finished`), as a folder written before rows held them has it."""
    from mgbench.records.results import append_line

    append_line(path, result.to_json())


def read_rows(folder: Path) -> pd.DataFrame:
    """A run folder's results file, as users read it."""
    return pd.read_json(folder / "results.jsonl", lines=True)


def tiny_job(
    steps: int, *, batch: int | None = None, image_size: int | None = None, device: str | None = None
) -> list[str]:
    """`--model tiny` and the options sizing its job: the job the CLI tests run, so that each run takes
    seconds. An option left None is not passed, so the CLI's default holds."""
    options = {
        "--device": device,
        "--model": "tiny",
        "--image-size": image_size,
        "--batch-per-gpu": batch,
        "--steps": steps,
    }
    return [item for option, value in options.items() if value is not None for item in (option, str(value))]


def processes_naming(path: Path) -> list[psutil.Process]:
    """Processes alive (zombies aside) whose command line names `path`."""
    found = []
    for process in psutil.process_iter(["cmdline", "status"]):
        if process.info["status"] != psutil.STATUS_ZOMBIE and str(path) in " ".join(process.info["cmdline"] or ()):
            found.append(process)
    return found


def wait_for(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


def endless_ddp_compare(out: Path, env: dict[str, str], **popen: Any) -> subprocess.Popen:
    """A compare of pytorch DDP on 1 and 2 CPU devices (tiny model) with far more steps than any
    test waits for, started in the background: for tests that stop or kill it mid-run."""
    command = [sys.executable, "-m", "mgbench", "compare", "--frameworks", "pytorch", "--gpus", "2"]
    command += [*tiny_job(100000, batch=4, image_size=32, device="cpu"), "--out", str(out)]
    return subprocess.Popen(command, env=env, **popen)


def two_cpu_compare(
    framework: str, strategy: str, out: Path, steps: int, *options: str, timeout: float = 600
) -> subprocess.CompletedProcess:
    """`compare` of one framework and strategy on 1 and 2 CPU devices (tiny model, 32 px, 4 per
    device, `steps` steps) into `out`, with `options` added."""
    job = tiny_job(steps, batch=4, image_size=32, device="cpu")
    return mgbench(
        "compare",
        "--frameworks",
        framework,
        "--strategies",
        strategy,
        "--gpus",
        "2",
        *job,
        *options,
        "--out",
        str(out),
        timeout=timeout,
    )


def profiled_two_cpu_compare(out: Path, framework: str, strategy: str, timeout: float = 600) -> pd.DataFrame:
    """`compare` on 1 and 2 CPU devices (tiny model, 32 px, 4 timed steps) with `--profile 2`
    into `out`; its rows, indexed by device count."""
    done = two_cpu_compare(framework, strategy, out, 4, "--profile", "2", timeout=timeout)
    assert done.returncode == 0, done.stderr
    return read_rows(out).set_index("devices")


@pytest.fixture
def fake_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    """Register the fake adapter in this process too."""
    monkeypatch.syspath_prepend(str(TESTS))
    monkeypatch.setenv("MGBENCH_PLUGINS", "fakefw")


@pytest.fixture
def in_process(fake_plugin, monkeypatch: pytest.MonkeyPatch) -> None:
    """Compares run in this process; their runs' workers load the fake adapter."""
    monkeypatch.setenv("PYTHONPATH", cli_env()["PYTHONPATH"])


def _options(job: dict[str, str]) -> list[str]:
    return [item for key, value in sorted(job.items()) for item in (f"--{key.replace('_', '-')}", value)]


def run_name(
    framework: str, strategy: str, gpus: int, batch: int, lr: float, steps: int = 1, device: str = "cpu", **job: str
) -> str:
    """The name `saved_state` gives a run (its .npz, and its run folder holding the row)."""
    return "-".join([framework, strategy, f"{gpus}x{batch}", f"lr{lr}", f"{steps}steps", device, *_options(job)[1::2]])


def state_run_args(
    state: Path, framework: str, strategy: str, gpus: int, batch: int, lr: float, steps: int = 1, device: str = "cpu"
) -> list[str]:
    """`mgbench run`'s arguments for the run `saved_state` makes, writing its weights to `state`: a test that
    starts the same run under a launcher of its own compares its weights with saved_state's."""
    return [
        "run",
        "--framework",
        framework,
        "--strategy",
        strategy,
        "--gpus",
        str(gpus),
        *tiny_job(steps, batch=batch, device=device),
        "--lr",
        str(lr),
        "--save-state",
        str(state),
    ]


def saved_state(
    folder: Path,
    framework: str,
    strategy: str,
    gpus: int,
    batch: int,
    lr: float,
    steps: int = 1,
    device: str = "cpu",
    **job: str,
) -> dict:
    """Weights after `steps` steps of `mgbench run` on the tiny model (the framework's environment runs it).

    `job` adds run options (`data_format="channels_last"` -> `--data-format channels_last`). Runs are
    named by everything that defines them, so a run already in `folder` is reused (they are deterministic);
    its row is in `folder / run_name(...)`.
    """
    options = _options(job)
    name = run_name(framework, strategy, gpus, batch, lr, steps, device, **job)
    path = folder / f"{name}.npz"
    if not path.exists():
        done = mgbench(
            *state_run_args(path, framework, strategy, gpus, batch, lr, steps, device),
            *options,
            "--out",
            str(folder / name),
        )
        assert done.returncode == 0, done.stdout + done.stderr
    return load_state(path)


def run_row(folder: Path, *run: Any, **job: Any) -> pd.Series:
    """The result row of the run `saved_state(folder, *run, **job)` made: it takes the same arguments,
    which `run_name` turns into that run's folder."""
    return read_rows(folder / run_name(*run, **job)).iloc[0]


def assert_compiled_equals_eager(
    folder: Path, framework: str, strategy: str, gpus: int, batch: int, tolerance: float, **job: str
) -> pd.Series:
    """A compiled step trains as the eager one: the compile step is a training step, so `--compile
    --steps 1` trains two steps, as `--steps 2` does without it, and must leave the same weights and
    report the loss of the eager run's second step (not its first: the compile step trained).
    Returns the compiled run's row."""
    eager = saved_state(folder, framework, strategy, gpus, batch, 0.5, steps=2, **job)
    compiled = saved_state(folder, framework, strategy, gpus, batch, 0.5, steps=1, compile="default", **job)
    assert max_difference(eager, compiled) < tolerance
    eager_row = run_row(folder, framework, strategy, gpus, batch, 0.5, steps=2, **job)
    row = run_row(folder, framework, strategy, gpus, batch, 0.5, steps=1, compile="default", **job)
    assert row.losses == pytest.approx(eager_row.losses[1:], rel=tolerance)
    assert eager_row.losses[0] != pytest.approx(eager_row.losses[1], rel=100 * tolerance)
    assert row.compile == "default" and row.compile_seconds > 0 and len(row.step_seconds) == 1
    return row


def load_state(path: Path) -> dict:
    """Weights written by `mgbench run --save-state` (.npz of named arrays)."""
    with np.load(path) as state:
        return {k: state[k] for k in state.files}


def max_difference(a: dict, b: dict) -> float:
    assert a.keys() == b.keys()
    return max(float(abs(a[k] - b[k]).max()) for k in a)


def assert_two_devices_equal_one(folder: Path, framework: str, strategy: str, tolerance: float, **job: Any) -> dict:
    """`assert_devices_equal_one` on 2 devices."""
    return assert_devices_equal_one(folder, framework, strategy, tolerance, 2, **job)


def assert_devices_equal_one(
    folder: Path, framework: str, strategy: str, tolerance: float, devices: int, **job: Any
) -> dict:
    """Data parallelism's proof: `devices` devices sharing a global batch of 4 images per device
    must leave the same weights as 1 device on that whole batch, within `tolerance`, while the
    same steps moved the weights more than 1e-3 (a step that did nothing would pass the first
    check). Returns the 1-device weights; `job` passes run options (`steps=2`,
    `data_format=...`) to every run."""
    batch = 4 * devices
    initial = saved_state(folder, framework, strategy, 1, batch, 0.0, **job)
    single = saved_state(folder, framework, strategy, 1, batch, 0.5, **job)
    spread = saved_state(folder, framework, strategy, devices, 4, 0.5, **job)
    moved = max_difference(single, initial)
    assert moved > 1e-3
    assert max_difference(single, spread) < tolerance < moved
    return single


def framework_python(framework: str) -> str:
    """The framework's own interpreter (`make env-NAME`), or skip the test saying it is not built."""
    from mgbench.frameworks.registry import framework_spec
    from mgbench.runner.venvs import inspect_installation

    spec = framework_spec(framework)
    found = inspect_installation(spec)
    if not found.installed:
        pytest.skip(f"{framework} is not installed (missing {', '.join(found.missing)}): {spec.install_hint}")
    return found.interpreter


def run_in(python: str, code: str, *args: str, timeout: float = 600) -> str:
    """Run `code` (with `args` in its sys.argv[1:]) in another interpreter with this checkout's
    mgbench and the tests' plugin (`cli_env`'s MGBENCH_PLUGINS, which every RunConfig's model
    lookup reads) importable; returns stdout."""
    env = cli_env(
        PYTHONPATH=os.pathsep.join(filter(None, [str(TESTS.parent), str(TESTS), os.environ.get("PYTHONPATH", "")]))
    )
    done = subprocess.run([python, "-c", code, *args], capture_output=True, text=True, timeout=timeout, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def one_epoch_rows(framework: str, strategy: str, sample: Path, out: Path, workers: int = 1) -> list[dict]:
    """`compare` training one epoch of a sample ChestX-ray14 folder through the framework's own
    loader on 1 and 2 CPU devices, with validation and the test split: the rows, checked ok and
    carrying what every real-data row must (loader, workers, time to train, AUCs)."""
    done = two_cpu_compare(
        framework, strategy, out, 1, "--dataset", f"chestxray:{sample}", "--epochs", "1", "--workers", str(workers)
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(row["devices"] for row in rows) == [1, 2]
    from mgbench.frameworks.registry import framework_spec

    for row in rows:
        assert row["status"] == "ok", row.get("error")
        assert row["loader"] == framework_spec(framework).capabilities.loader and row["loader_workers"] == workers
        (epoch,) = row["epoch_metrics"]
        assert 0 <= epoch["val_auc"] <= 1 and epoch["samples_per_sec"] > 0
        assert 0 <= row["test_metrics"]["auc"] <= 1 and row["test_metrics"]["loss"] > 0
        assert row["time_to_train_seconds"] >= epoch["train_seconds"] + epoch["val_seconds"]
    return rows
