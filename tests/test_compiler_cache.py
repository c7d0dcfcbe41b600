"""Torch's compiler cache outlives each run: every run has a TMPDIR of its own, removed after it,
where torch keeps its cache by default, so without `counting.compiler_cache` in the run's
environment a compiled run would compile from nothing every time."""

from pathlib import Path

import pytest
from conftest import mgbench, state_run_args

from mgbench.core.config import RunConfig
from mgbench.frameworks.registry import framework_spec
from mgbench.runner.counting import COMPILER_CACHE_ENV, compiler_cache
from mgbench.runner.orchestrator import child_environment


def test_a_runs_environment_names_the_shared_compiler_cache_unless_the_user_named_one(tmp_path, monkeypatch):
    config = RunConfig.flat("pytorch", "ddp", "tiny", 1, "cpu", 2, 4)
    monkeypatch.delenv(COMPILER_CACHE_ENV, raising=False)
    monkeypatch.setenv("MGBENCH_WORK_CACHE", str(tmp_path / "cache" / "work.json"))
    assert child_environment(config, framework_spec("pytorch"))[COMPILER_CACHE_ENV] == str(
        tmp_path / "cache" / "torchinductor"
    )
    monkeypatch.setenv(COMPILER_CACHE_ENV, str(tmp_path / "mine"))
    assert compiler_cache() == str(tmp_path / "mine")
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
