"""Faults during a compare: out-of-memory retried with a halved batch, Ctrl-C/SIGTERM keeping
finished rows, and `--resume` rerunning only what is not done. The hang past the timeout and the
crash are in test_compare.py."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import psutil
import pytest
from conftest import cli_env, interruptible, mgbench, read_rows, tiny_job
from fakefw import OOM_ABOVE_BATCH


def compare_fake(out: Path, strategies: str, *options: str, **env: str) -> subprocess.CompletedProcess:
    """`mgbench compare` of the fake framework's `strategies` on 1 device into `out`."""
    return mgbench(
        "compare", "--frameworks", "fake", "--strategies", strategies, "--gpus", "1", *options, "--out", str(out), **env
    )


def test_oom_retries_with_halved_batch_and_the_compare_goes_on(tmp_path):
    out = tmp_path / "oom"
    done = compare_fake(out, "oom-above,steady", *tiny_job(6, batch=16))
    assert done.returncode == 0, done.stderr
    rows = read_rows(out).set_index("strategy")
    retried = rows.loc["oom-above"]
    assert retried.status == "ok"
    assert retried.batch_per_device == OOM_ABOVE_BATCH == 4  # 16 -> 8 -> 4
    assert retried.requested_batch_per_device == 16 and retried.oom_retries == 2
    assert retried.global_batch == 4
    steady = rows.loc["steady"]
    assert steady.status == "ok" and steady.batch_per_device == 16 and steady.oom_retries == 0


def test_oom_at_batch_one_stays_an_oom_row(tmp_path):
    out = tmp_path / "oom1"
    done = compare_fake(out, "oom", *tiny_job(4, batch=2))
    assert done.returncode == 1, done.stderr
    row = read_rows(out).iloc[0]
    assert row.status == "oom" and row.batch_per_device == 1 and row.oom_retries == 1
    assert "out of memory" in row.error


def children_of_run(out):
    """Processes whose command line names this run folder (the run subprocesses)."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        if any(str(out) in part for part in process.info["cmdline"] or []):
            found.append(process)
    return found


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_keeps_finished_rows_and_marks_the_running_one(tmp_path, sig):
    out = tmp_path / "interrupted"
    compare = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mgbench",
            "compare",
            "--frameworks",
            "fake",
            "--strategies",
            "steady,slow,flaky",
            "--gpus",
            "1",
            *tiny_job(6),
            "--out",
            str(out),
        ],
        env=cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=interruptible,
    )
    slow_log = out / "logs" / "fake-slow-1cpu.log"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (slow_log.exists() and "step" in slow_log.read_text()):
        time.sleep(0.1)
    assert slow_log.exists(), "the slow run never started"
    compare.send_signal(sig)
    stdout, stderr = compare.communicate(timeout=60)
    assert compare.returncode == 130, stderr
    rows = read_rows(out)
    assert list(rows.strategy) == ["steady", "slow"]
    assert list(rows.status) == ["ok", "interrupted"]
    assert "interrupted" in rows.iloc[1].error
    assert not children_of_run(out), "the interrupted run's processes are still alive"
    summary = pd.read_csv(out / "summary.csv")
    assert list(summary.status) == ["ok", "interrupted"]
    assert f"--resume {out}" in stderr.replace("\n", "")


def test_resume_skips_done_runs_and_reruns_failed_ones(tmp_path):
    out = tmp_path / "resume"
    first = compare_fake(out, "steady,flaky", *tiny_job(6), FAKE_FAIL="1")
    assert first.returncode == 1, first.stderr
    before = read_rows(out).set_index("strategy")
    assert list(before.status) == ["ok", "failed"]
    steady_line = (out / "results.jsonl").read_text().splitlines()[0]

    resumed = mgbench("compare", "--resume", str(out), FAKE_FAIL="0")
    assert resumed.returncode == 0, resumed.stderr
    assert "1 run ->" in resumed.stderr
    lines = (out / "results.jsonl").read_text().splitlines()
    assert len(lines) == 2 and lines[0] == steady_line  # done row kept byte for byte, not rerun
    after = read_rows(out).set_index("strategy")
    assert after.loc["flaky", "status"] == "ok"
    recorded = json.loads((out / "compare.json").read_text())
    assert len(recorded["configs"]) == 2 and recorded["resumed"] == [f"mgbench compare --resume {out}"]

    again = mgbench("compare", "--resume", str(out))
    assert again.returncode == 0 and "0 runs" in again.stderr
    assert (out / "results.jsonl").read_text().splitlines() == lines


@pytest.mark.parametrize(
    "args, message",
    [
        (["compare", "--resume", "/nonexistent-run"], "not a compare run folder"),
        (["compare"], "--frameworks is required"),
        (["compare", "--frameworks", "fake", "--hosts", "a:0"], "--hosts takes host:slots"),
        (["compare", "--frameworks", "fake", "--hosts", "a:2,b:1"], "same slot count"),
        (
            ["compare", "--frameworks", "fake", "--hosts", "localhost:1,127.0.0.1:1", "--gpus", "1,3"],
            "--gpus 3 with --hosts",
        ),
        (["compare", "--frameworks", "fake", "--profile", "-1"], "--profile takes a number of steps"),
        (["run", "--framework", "fake", "--strategy", "warp"], "no strategy 'warp'"),
        (["run", "--framework", "fake", "--gpus", "0"], "device count must be at least 1"),
        (["bandwidth", "--sizes", "1K,x"], "--sizes takes byte counts"),
        (["bandwidth", "--device", "cpu", "--gpus", "4096"], "--gpus 4096 asked for"),
    ],
)
def test_more_bad_input_is_one_line_and_exit_2(args, message):
    done = mgbench(*args)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mgbench: error: ") and message in lines[0], done.stderr


def test_oom_under_a_launchers_banner_is_retried_and_the_row_says_the_batch_it_ran_at(tmp_path):
    """Keras over PyTorch's out-of-memory error, its own line first and torch's text below it, then
    60 lines of a launcher's banner: the whole log is read, not its tail, so the run is restarted
    with half the batch, and round 2 starts at the batch round 1 fitted instead of running out again."""
    out = tmp_path / "banner"
    done = compare_fake(out, "oom-banner", "--repeat", "2", *tiny_job(6, batch=16))
    assert done.returncode == 0, done.stderr
    row = read_rows(out).iloc[0]
    assert row.status == "ok" and row.batch_per_device == OOM_ABOVE_BATCH == 4  # 16 -> 8 -> 4
    assert row.requested_batch_per_device == 16 and row.oom_retries == 2
    assert "out of memory at 16 per device; ran at 4" in row.warnings
    rounds = pd.read_json(out / "rounds.jsonl", lines=True)
    assert list(rounds.batch_per_device) == [4, 4] and list(rounds.oom_retries) == [2, 2]
    assert done.stderr.count("restarts with") == 2  # round 1's two restarts; round 2 none


def test_oom_at_every_batch_names_the_batches_tried_and_the_hint(tmp_path):
    out = tmp_path / "oom-all"
    done = compare_fake(out, "oom", *tiny_job(4, batch=4))
    assert done.returncode == 1, done.stderr
    row = read_rows(out).iloc[0]
    assert row.status == "oom" and row.oom_retries == 2
    first = row.error.splitlines()[0]
    assert (
        first == "out of memory at 1 per device (tried 4, 2, 1); set a smaller model, --image-size or --batch-per-gpu"
    )
    assert "CUDA out of memory. Tried to allocate 20.00 GiB (exit code 1)" in row.error
