"""Torch's compiler cache outlives each run: every run has a TMPDIR of its own, removed after it,
where torch keeps its cache by default, so without mgbench's compiler cache in the run's
environment a compiled run would compile from nothing every time."""

import os
import time
from pathlib import Path

import pandas as pd
import pytest
from conftest import framework_python, mgbench, read_rows, state_run_args, tiny_job

from mgbench.core.config import RunConfig
from mgbench.frameworks.registry import framework_spec
from mgbench.runner.counting import cache_fallback
from mgbench.runner.orchestrator import child_environment
from mgbench.training.compile_cache import COLD_ENV, COLD_FOLDER, CacheWatch, cold_variables

COMPILER_CACHE_ENV = "TORCHINDUCTOR_CACHE_DIR"
"""Where torch's inductor keeps its compiled graphs."""


def test_a_runs_environment_names_the_shared_compiler_cache_unless_the_user_named_one(tmp_path, monkeypatch):
    config = RunConfig.flat("pytorch", "ddp", "tiny", 1, "cpu", 2, 4)
    monkeypatch.delenv(COMPILER_CACHE_ENV, raising=False)
    monkeypatch.setenv("MGBENCH_WORK_CACHE", str(tmp_path / "cache" / "work.json"))
    assert child_environment(config, framework_spec("pytorch"))[COMPILER_CACHE_ENV] == str(
        tmp_path / "cache" / "torchinductor"
    )
    monkeypatch.setenv(COMPILER_CACHE_ENV, str(tmp_path / "mine"))
    assert child_environment(config, framework_spec("pytorch"))[COMPILER_CACHE_ENV] == str(tmp_path / "mine")


def compiled_graphs(cache: Path) -> set[Path]:
    """The compiled graphs inductor's FX graph cache holds under `cache`."""
    return {path.relative_to(cache) for path in (cache / "fxgraph").rglob("*") if path.is_file()}


@pytest.mark.slow
def test_a_second_compiled_run_reads_what_the_first_compiled(tmp_path):
    """The first compiled run leaves its graphs in the shared cache; the second, the same job,
    finds them there and writes no graph of its own (a miss would add one under a new key)."""
    pytest.importorskip("torch")
    cache = tmp_path / "cache" / "torchinductor"
    env = {"MGBENCH_WORK_CACHE": str(tmp_path / "cache" / "work.json"), COMPILER_CACHE_ENV: ""}
    graphs = []
    for attempt in ("first", "second"):
        args = state_run_args(tmp_path / f"{attempt}.npz", "pytorch", "ddp", 1, 4, 0.5)
        done = mgbench(*args, "--compile", "default", "--out", str(tmp_path / attempt), **env)
        assert done.returncode == 0, done.stderr
        graphs.append(compiled_graphs(cache))
    assert graphs[0] and graphs[1] == graphs[0]


def test_a_cache_folder_that_cannot_be_made_is_a_temporary_one_for_every_cache(monkeypatch):
    """A `HOME` that is no folder, and a cache file under a file: the compilers' caches (torch's and
    JAX's) and matplotlib's folder are all folders that can be made, in a temporary folder that
    `cache_fallback` names once."""
    config = RunConfig.flat("pytorch", "ddp", "tiny", 1, "cpu", 2, 4)
    monkeypatch.setenv("HOME", "/dev/null")
    monkeypatch.setenv("MGBENCH_WORK_CACHE", "/dev/null/x.json")
    for name in (COMPILER_CACHE_ENV, "JAX_COMPILATION_CACHE_DIR", "MPLCONFIGDIR", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(name, raising=False)
    env = child_environment(config, framework_spec("pytorch"))
    folders = [Path(env[name]) for name in (COMPILER_CACHE_ENV, "JAX_COMPILATION_CACHE_DIR", "MPLCONFIGDIR")]
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
        assert folder.is_dir() and not folder.is_relative_to("/dev/null")
    assert (
        cache_fallback() is not None and "/dev/null" in cache_fallback() and str(folders[0].parent) in cache_fallback()
    )


def test_jax_keeps_every_compile_in_the_shared_cache_unless_the_user_named_its_own(tmp_path, monkeypatch):
    config = RunConfig.flat("keras-jax", "jax-dp", "tiny", 1, "cpu", 2, 4)
    monkeypatch.setenv("MGBENCH_WORK_CACHE", str(tmp_path / "cache" / "work.json"))
    monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR", raising=False)
    env = child_environment(config, framework_spec("keras-jax"))
    assert env["JAX_COMPILATION_CACHE_DIR"] == str(tmp_path / "cache" / "jax")
    assert env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] == "0"
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(tmp_path / "mine"))
    assert child_environment(config, framework_spec("keras-jax"))["JAX_COMPILATION_CACHE_DIR"] == str(tmp_path / "mine")


def test_a_compile_step_is_warm_when_the_caches_gain_no_entry_and_cold_when_they_do(tmp_path):
    cache = tmp_path / "jax"
    env = {"JAX_COMPILATION_CACHE_DIR": str(cache), "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "torch")}
    assert CacheWatch.start(env).state(time.time()) is None  # nothing kept, nothing there
    watch = CacheWatch.start(env)
    cache.mkdir()
    (cache / "jit_step-abc-cache").write_bytes(b"compiled")
    assert watch.state(time.time()) == "cold"
    watch = CacheWatch.start(env)
    (cache / "jit_step-abc-cache").write_bytes(b"read again")  # an entry rewritten is no new entry
    (tmp_path / "torch" / "locks").mkdir(parents=True)
    (tmp_path / "torch" / "locks" / "entry.lock").write_text("")
    compiled_by = time.time()
    later = cache / "jit_evaluate-def-cache"  # compiled after the compile step ended: not its entry
    later.write_bytes(b"compiled later")
    os.utime(later, (compiled_by + 1, compiled_by + 1))
    assert watch.state(compiled_by) == "warm"
    assert watch.state(compiled_by + 1) == "cold"


def test_cold_caches_are_empty_folders_in_the_runs_own_temporary_folder(tmp_path):
    assert cold_variables({"TMPDIR": str(tmp_path)}) == {}
    cold = cold_variables({"TMPDIR": str(tmp_path), COLD_ENV: "1"})
    assert cold["JAX_COMPILATION_CACHE_DIR"] == str(tmp_path / COLD_FOLDER / "jax")
    assert cold[COMPILER_CACHE_ENV] == str(tmp_path / COLD_FOLDER / "torchinductor")


@pytest.mark.slow
def test_a_pytorch_run_trains_where_the_cache_folder_cannot_be_made(tmp_path):
    """HOME=/dev/null: torch's compiler cache and matplotlib's folder cannot be made under it; the
    run trains with both in a temporary folder, said once."""
    pytest.importorskip("torch")
    done = mgbench(
        "compare",
        "--frameworks",
        "pytorch",
        "--gpus",
        "1",
        *tiny_job(2, batch=2, device="cpu"),
        "--out",
        str(tmp_path / "run"),
        HOME="/dev/null",
        MGBENCH_WORK_CACHE="",
        **{COMPILER_CACHE_ENV: ""},
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("cannot be made") == 1, done.stderr
    assert read_rows(tmp_path / "run").status.tolist() == ["ok"]


def keras_jax_row(folder: Path, *options: str, cache: Path) -> pd.Series:
    done = mgbench(
        "compare",
        "--frameworks",
        "keras-jax",
        "--strategies",
        "jax-dp",
        "--gpus",
        "1",
        *tiny_job(2, batch=2, device="cpu"),
        "--out",
        str(folder),
        *options,
        MGBENCH_WORK_CACHE=str(cache / "work.json"),
        JAX_COMPILATION_CACHE_DIR="",
    )
    assert done.returncode == 0, done.stderr
    return read_rows(folder).iloc[0]


@pytest.mark.slow
def test_keras_jax_compiles_once_and_a_second_run_reads_its_step_from_the_cache(tmp_path):
    """The first run compiles into the shared cache, the second reads what it compiled; under
    --cold-cache a run compiles again, from an empty cache, and leaves the shared one as it was."""
    framework_python("keras-jax")
    cache = tmp_path / "cache"
    first = keras_jax_row(tmp_path / "first", cache=cache)
    kept = set((cache / "jax").iterdir())
    second = keras_jax_row(tmp_path / "second", cache=cache)
    cold = keras_jax_row(tmp_path / "cold", "--cold-cache", cache=cache)
    assert (first.compile_cache, second.compile_cache, cold.compile_cache) == ("cold", "warm", "cold")
    assert kept and set((cache / "jax").iterdir()) == kept
