"""The flow of `compare`, `run` and `--resume` against hostile use: rounds end once no run owes
one, a resume keeps every row or refuses the folder and checks its plan as a new compare checks
one, `run` appends to no used folder, and what they print says what happens."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import mgbench, one_line_error, read_rows, tiny_job
from fakefw import OOM_ABOVE_BATCH

from mgbench.runner.orchestrator import RDZV_PORT_ENV

FAKE = ("--frameworks", "fake", "--gpus", "1")
FINISHED = (*FAKE, "--strategies", "steady,oom-above", *tiny_job(4, batch=2 * OOM_ABOVE_BATCH, device="cpu"))
"""A compare whose two rows are ok, one of them after an out-of-memory retry halved its batch."""
LOCAL_HOSTS = ("--hosts", "localhost:1,127.0.0.1:1", "--gpus", "1,2")
WITHIN = 120
"""Seconds any command here may take: a compare that would never end fails the test instead of hanging it."""


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("finished") / "run"
    done = mgbench("compare", *FINISHED, "--out", str(out), timeout=WITHIN)
    assert done.returncode == 0, done.stderr
    assert list(read_rows(out).batch_per_device) == [2 * OOM_ABOVE_BATCH, OOM_ABOVE_BATCH]
    return out


def copy_of(folder: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(folder, tmp_path / folder.name))


def edit_plan(folder: Path, edit) -> None:
    """`compare.json` changed by `edit(plan)`, as a user with an editor would."""
    plan = json.loads((folder / "compare.json").read_text())
    edit(plan)
    (folder / "compare.json").write_text(json.dumps(plan))


def rows_and_rounds(folder: Path) -> tuple[str, str]:
    return (folder / "results.jsonl").read_text(), (folder / "rounds.jsonl").read_text()


def test_run_into_a_used_folder_is_refused_and_leaves_it_as_it_was(finished, tmp_path):
    out = copy_of(finished, tmp_path)
    before = rows_and_rounds(out)
    other_job = ["--framework", "fake", "--strategy", "steady", *tiny_job(4, image_size=48, device="cpu")]
    line = one_line_error(mgbench("run", *other_job, "--out", str(out), timeout=WITHIN))
    assert f"--out {out} is not empty (it holds a compare; continue it with mgbench compare --resume {out})" in line
    assert rows_and_rounds(out) == before
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    assert "holds other files" in one_line_error(mgbench("run", *other_job, "--out", str(mine), timeout=WITHIN))
    assert [path.name for path in mine.iterdir()] == ["notes.txt"]


@pytest.mark.parametrize(
    "options, status",
    [
        (["--strategies", "steady", "--precision", "bf16", "--repeat", "100000000"], "unsupported"),
        (["--strategies", "hang", "--timeout", "0.01", "--repeat", "1000000000000"], "timeout"),
    ],
    ids=["unsupported", "timed-out"],
)
def test_rounds_end_once_no_run_owes_one(tmp_path, options, status):
    out = tmp_path / "run"
    done = mgbench("compare", *FAKE, *tiny_job(4, device="cpu"), *options, "--out", str(out), timeout=WITHIN)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "exit 1: " in done.stderr
    assert list(read_rows(out).status) == [status]
    assert len((out / "rounds.jsonl").read_text().splitlines()) == 1


def test_a_timeout_says_its_seconds_with_the_digits_they_need(tmp_path):
    out = tmp_path / "run"
    done = mgbench("compare", *FAKE, "--strategies", "hang", *tiny_job(4), "--timeout", "0.01", "--out", str(out))
    assert done.returncode == 1, done.stderr
    assert f"1 run -> {out}" in done.stderr
    assert read_rows(out).error[0].startswith("timed out after 0.01 s\n")


def test_resume_refuses_a_plan_that_no_longer_lists_a_run_with_rows(finished, tmp_path):
    out = copy_of(finished, tmp_path)
    before = rows_and_rounds(out)
    edit_plan(out, lambda plan: plan["configs"].pop(0))
    line = one_line_error(mgbench("compare", "--resume", str(out), timeout=WITHIN))
    assert (
        f"--resume {out}: its rows do not fit the plan in compare.json (fake-steady-1cpu has rows but is not planned)"
        in line
    )
    assert rows_and_rounds(out) == before


def test_resume_refuses_rows_of_another_job_than_the_plans(finished, tmp_path):
    out = copy_of(finished, tmp_path)
    before = rows_and_rounds(out)
    edit_plan(out, lambda plan: plan["configs"][0].update(steps=7))
    line = one_line_error(mgbench("compare", "--resume", str(out), timeout=WITHIN))
    assert "(fake-steady-1cpu ran another job (steps 4, planned 7));" in line
    assert rows_and_rounds(out) == before


def test_resume_keeps_rows_whose_batch_an_out_of_memory_retry_halved(finished, tmp_path):
    out = copy_of(finished, tmp_path)
    before = rows_and_rounds(out)
    done = mgbench("compare", "--resume", str(out), "--format", "json", timeout=WITHIN)
    assert done.returncode == 0, done.stderr
    assert "0 runs ->" in done.stderr and rows_and_rounds(out) == before
    rows = {row["run_id"]: row for row in json.loads(done.stdout)["rows"]}
    assert sorted(rows) == ["fake-oom-above-1cpu", "fake-steady-1cpu"]


@pytest.mark.parametrize(
    "edit, message",
    [
        ({"devices": 4096}, "the recorded plan cannot run here: --gpus 4096 asked for, but only"),
        ({"device_kind": "cuda"}, "the recorded plan cannot run here: --gpus 1 asked for, but only 0 GPUs are visible"),
    ],
    ids=["more-devices-than-cores", "cuda-without-gpus"],
)
def test_resume_checks_the_devices_of_the_runs_it_would_launch(finished, tmp_path, edit, message):
    out = copy_of(finished, tmp_path)
    before = rows_and_rounds(out)
    edit_plan(out, lambda plan: plan["configs"].append({**plan["configs"][0], **edit}))
    line = one_line_error(mgbench("compare", "--resume", str(out), timeout=WITHIN))
    assert f"--resume {out}: {message}" in line
    assert rows_and_rounds(out) == before and sorted(path.name for path in (out / "logs").iterdir()) == [
        "fake-oom-above-1cpu.log",
        "fake-steady-1cpu.log",
    ]


@pytest.mark.parametrize("port", ["abc", "0", "70000"])
def test_a_bad_rendezvous_port_with_hosts_is_refused_before_anything_is_written(tmp_path, port):
    out = tmp_path / "run"
    done = mgbench(
        "compare", *FAKE[:2], *LOCAL_HOSTS, *tiny_job(4), "--out", str(out), timeout=WITHIN, **{RDZV_PORT_ENV: port}
    )
    assert f"{RDZV_PORT_ENV} takes a port number, 1 to 65535, got {port!r}" in one_line_error(done)
    assert not out.exists()


def test_a_bad_rendezvous_port_refuses_the_resume_of_a_compare_with_hosts(finished, tmp_path):
    out = copy_of(finished, tmp_path)
    before = rows_and_rounds(out)
    edit_plan(out, lambda plan: plan["options"].update(hosts=LOCAL_HOSTS[1]))
    done = mgbench("compare", "--resume", str(out), "--repeat", "2", timeout=WITHIN, **{RDZV_PORT_ENV: "abc"})
    assert f"{RDZV_PORT_ENV} takes a port number" in one_line_error(done)
    assert rows_and_rounds(out) == before


def test_resume_counts_the_rounds_it_runs_over_uneven_rounds(tmp_path):
    out = tmp_path / "run"
    uneven = ("--strategies", "steady,flaky", *tiny_job(4, device="cpu"), "--repeat", "2")
    first = mgbench("compare", *FAKE, *uneven, "--out", str(out), timeout=WITHIN, FAKE_FAIL="1")
    assert first.returncode == 1, first.stderr  # steady: 2 rounds ok; flaky: round 1 failed
    resumed = mgbench("compare", "--resume", str(out), "--repeat", "1", timeout=WITHIN, FAKE_FAIL="0")
    assert resumed.returncode == 0, resumed.stderr
    assert "[1/1] start fake flaky x1 (log: " in resumed.stderr
    assert "[1/1] ok fake flaky x1: " in resumed.stderr
