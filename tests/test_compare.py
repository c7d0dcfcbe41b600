"""`compare` end to end on the fake adapter: rows for every run, failures kept, others unaffected."""

import dataclasses
import json
import os

import pandas as pd
import pytest
from conftest import mgbench, read_rows, tiny_job

from mgbench.core.job import Job
from mgbench.core.kinds import DeviceKind
from mgbench.runner import compare_service
from mgbench.runner.compare_service import NewCompare, Voice
from mgbench.runner.rounds import RoundBook
from mgbench.training.compile_cache import COLD_ENV, cold_asked


def test_crash_timeout_and_oom_become_rows_and_the_compare_finishes(tmp_path):
    out = tmp_path / "run"
    done = mgbench(
        "compare",
        "--frameworks",
        "fake",
        "--strategies",
        "steady,crash,hang,oom",
        "--gpus",
        "2",
        *tiny_job(20, batch=2),
        "--timeout",
        "10",
        "--out",
        str(out),
    )
    assert done.returncode == 1, done.stderr
    rows = read_rows(out)
    assert len(rows) == 8
    status = {(r.strategy, r.devices): r.status for r in rows.itertuples()}
    assert status == {
        ("steady", 1): "ok",
        ("steady", 2): "ok",
        ("crash", 1): "failed",
        ("crash", 2): "failed",
        ("hang", 1): "timeout",
        ("hang", 2): "timeout",
        ("oom", 1): "oom",
        ("oom", 2): "oom",
    }
    crash = rows[rows.strategy == "crash"].iloc[0]
    assert "fake adapter crashed on purpose" in crash.error
    assert "timed out after 10 s" in rows[rows.strategy == "hang"].iloc[0].error
    steady = rows[rows.strategy == "steady"].set_index("devices")
    assert steady.loc[2, "global_batch"] == 2 * steady.loc[1, "global_batch"]
    summary = pd.read_csv(out / "summary.csv").set_index(["strategy", "devices"])
    speedup = summary.loc[("steady", 2), "speedup"]
    assert abs(speedup - steady.loc[2, "samples_per_sec"] / steady.loc[1, "samples_per_sec"]) < 1e-9
    assert steady.loc[2, "speedup"] == pytest.approx(speedup)
    assert steady.loc[2, "scaling_efficiency_fraction"] == pytest.approx(speedup / 2)
    assert steady.loc[2, "samples_per_sec_per_device"] == pytest.approx(steady.loc[2, "samples_per_sec"] / 2)
    assert rows[rows.strategy == "crash"].speedup.isna().all()
    assert json.loads(summary.loc[("steady", 2), "framework_versions"]) == {"fake": "1.0"}
    assert "eval_metrics" in summary and "epoch_metrics" not in summary and "allreduce_step_fraction" not in summary
    for run_id in steady.run_id:
        assert (out / "logs" / f"{run_id}.log").exists()
        trace = pd.read_csv(out / "traces" / f"{run_id}.csv")
        assert len(trace) > 0 and set(trace.kind) == {"cpu"}
    recorded = json.loads((out / "compare.json").read_text())
    assert "--strategies steady,crash,hang,oom" in recorded["command"] and len(recorded["configs"]) == 8
    assert "CPU devices stand in for GPUs" in done.stderr


def test_strong_scaling_splits_the_global_batch(tmp_path):
    out = tmp_path / "strong"
    done = mgbench(
        "compare",
        "--frameworks",
        "fake",
        "--strategies",
        "steady",
        "--gpus",
        "1,2",
        "--scaling",
        "strong",
        *tiny_job(12, batch=8),
        "--out",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    rows = read_rows(out).set_index("devices")
    assert rows.loc[1, "batch_per_device"] == 8 and rows.loc[2, "batch_per_device"] == 4
    assert rows.loc[1, "global_batch"] == rows.loc[2, "global_batch"] == 8


def scaling_of(rows: pd.DataFrame) -> pd.DataFrame:
    """Each row's speed-up, efficiency and rate per device as the one definition gives them from
    its steady rate and its 1-device row's (`records.scaling`), indexed by device count."""
    rates = rows.set_index("devices").samples_per_sec
    speedup = rates / rates[1]
    return pd.DataFrame(
        {
            "speedup": speedup,
            "scaling_efficiency_fraction": speedup / rates.index,
            "samples_per_sec_per_device": rates / rates.index,
        }
    )


def test_a_compare_driven_from_python_writes_the_results_file_the_cli_writes(tmp_path, in_process):
    """The compare service called from Python (no CLI) and `mgbench compare` on the same compare
    (fake steady on 1 and 2 CPU devices): both results files hold the same columns, in the same
    order, and each its speed-ups, efficiencies and rates per device as its own rows give them."""
    job = Job("tiny", DeviceKind.CPU, batch_per_device=4, steps=6, image_size=32, init="framework")
    quiet = Voice(note=lambda line: None, progress=lambda line: None)
    asked = NewCompare(job, None, [("fake", None)], ["steady"], [1, 2], "weak", "python", out=tmp_path / "python")
    folder, plan, runs = compare_service.plan_compare(asked, quiet)
    with folder.claimed():
        compare_service.start_new(folder, plan, None)
        compare_service.run_rounds(folder, plan, RoundBook(runs, plan.repeat), quiet, lambda _: None, lambda _: None)
    cli = tmp_path / "cli"
    options = ["--frameworks", "fake", "--strategies", "steady", "--gpus", "2", "--init", "framework"]
    done = mgbench("compare", *options, *tiny_job(6, batch=4, image_size=32, device="cpu"), "--out", str(cli))
    assert done.returncode == 0, done.stderr
    python_rows, cli_rows = read_rows(folder.root), read_rows(cli)
    assert list(python_rows.columns) == list(cli_rows.columns)
    assert list(python_rows.status) == list(cli_rows.status) == ["ok", "ok"]
    for rows in (python_rows, cli_rows):
        figures = rows.set_index("devices")[["speedup", "scaling_efficiency_fraction", "samples_per_sec_per_device"]]
        pd.testing.assert_frame_equal(figures, scaling_of(rows), check_names=False, rtol=1e-12)


def test_a_resumed_cold_compare_runs_cold_and_a_plan_without_cold_caches_warm(tmp_path, in_process, monkeypatch):
    """`--cold-cache` is in the plan, not only in the environment of the compare that planned it:
    resumed by a process without `COLD_ENV`, a cold plan's runs are launched with it set (and
    the environment is as it was after); a plan written before it was recorded runs warm."""
    job = Job("tiny", DeviceKind.CPU, batch_per_device=4, steps=2, image_size=32, init="framework")
    quiet = Voice(note=lambda line: None, progress=lambda line: None)
    launched_cold = []
    monkeypatch.setattr(compare_service, "run_compare", lambda *_, **__: launched_cold.append(cold_asked()))
    monkeypatch.delenv(COLD_ENV, raising=False)
    for cold in (True, False):
        asked = NewCompare(job, None, [("fake", None)], ["steady"], [1], "weak", "python", out=tmp_path / f"{cold}")
        folder, plan, _ = compare_service.plan_compare(dataclasses.replace(asked, cold_cache=cold), quiet)
        with folder.claimed():
            compare_service.start_new(folder, plan, None)
        if not cold:  # as compare wrote it before the plan recorded cold caches
            recorded = json.loads(folder.compare_file.read_text())
            del recorded["options"]["cold_cache"]
            folder.compare_file.write_text(json.dumps(recorded))
        with folder.claimed():
            plan, book = compare_service.plan_resume(folder, "mgbench compare --resume", None, None, quiet)
            compare_service.run_rounds(folder, plan, book, quiet, lambda _: None, lambda _: None)
        assert json.loads(folder.compare_file.read_text())["options"]["cold_cache"] is cold
    assert launched_cold == [True, False] and COLD_ENV not in os.environ


def test_run_writes_its_row_as_a_compare_of_that_one_run_writes_it(tmp_path):
    """`mgbench run` and `mgbench compare` of the same one run (fake steady, 1 CPU device): the
    same columns, in the same order, the row finished alike (one round, speed-up 1 over itself)."""
    job = [*tiny_job(6, batch=4, image_size=32, device="cpu"), "--init", "framework"]
    ran = mgbench(
        "run", "--framework", "fake", "--strategy", "steady", "--gpus", "1", *job, "--out", str(tmp_path / "r")
    )
    assert ran.returncode == 0, ran.stderr
    options = ["--frameworks", "fake", "--strategies", "steady", "--gpus", "1"]
    compared = mgbench("compare", *options, *job, "--out", str(tmp_path / "c"))
    assert compared.returncode == 0, compared.stderr
    run_row, compare_row = read_rows(tmp_path / "r"), read_rows(tmp_path / "c")
    assert list(run_row.columns) == list(compare_row.columns)
    for rows in (run_row, compare_row):
        assert (rows.rounds[0], rows.speedup[0], rows.scaling_efficiency_fraction[0]) == (1, 1.0, 1.0)
        assert rows.samples_per_sec_per_device[0] == rows.samples_per_sec[0]
