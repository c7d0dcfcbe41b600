"""What a compare must never do silently: mix two compares in one folder, accept values that
make every row meaningless, hide why a run failed, leave launchers or their files behind, or
print an impossible speed-up without a word."""

import json
import os
import signal
import subprocess
import time

import pytest
from conftest import (
    cli_env,
    endless_ddp_compare,
    mgbench,
    one_line_error,
    processes_naming,
    read_rows,
    tiny_job,
    wait_for,
)

from mgbench.core.config import RunConfig
from mgbench.records.results import RunResult
from mgbench.reports.summary import results_frame
from mgbench.runner.orchestrator import failure_cause

FAKE_JOB = ["--frameworks", "fake", "--gpus", "1", *tiny_job(4)]


def test_out_on_a_used_run_folder_is_refused_and_left_as_it_was(tmp_path):
    out = tmp_path / "run"
    assert mgbench("compare", *FAKE_JOB, "--out", str(out)).returncode == 0
    before = (out / "results.jsonl").read_text()
    line = one_line_error(mgbench("compare", *FAKE_JOB, "--out", str(out)))
    assert f"--resume {out}" in line and "choose a new --out" in line
    assert (out / "results.jsonl").read_text() == before
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    assert "holds other files" in one_line_error(mgbench("compare", *FAKE_JOB, "--out", str(other)))
    assert (other / "notes.txt").read_text() == "mine" and len(list(other.iterdir())) == 1


@pytest.mark.parametrize(
    "option, message",
    [
        (["--lr", "nan"], "learning rate must be a finite number >= 0, got nan"),
        (["--lr", "-0.1"], "learning rate must be a finite number >= 0"),
        (["--timeout", "-1"], "--timeout: takes a positive number of seconds"),
        (["--timeout", "inf"], "--timeout: takes a positive number of seconds"),
    ],
)
def test_values_that_would_make_every_row_meaningless_are_refused(tmp_path, option, message):
    assert message in one_line_error(mgbench("compare", *FAKE_JOB, *option, "--out", str(tmp_path / "x")))
    assert not (tmp_path / "x").exists()


def test_resume_takes_a_new_timeout_and_skips_a_torn_last_line(tmp_path):
    out = tmp_path / "resume"
    first = mgbench(
        "compare", *FAKE_JOB, "--strategies", "steady,flaky", "--timeout", "60", "--out", str(out), FAKE_FAIL="1"
    )
    assert first.returncode == 1
    with (out / "results.jsonl").open("a") as results:
        results.write('{"framework": "fake", "strat')
    resumed = mgbench("compare", "--resume", str(out), "--timeout", "120", FAKE_FAIL="0")
    assert resumed.returncode == 0 and "Traceback" not in resumed.stderr, resumed.stderr
    assert json.loads((out / "compare.json").read_text())["options"]["timeout"] == 120
    assert list(read_rows(out).status) == ["ok", "ok"]


def test_resume_of_a_cut_short_plan_is_one_line(tmp_path):
    out = tmp_path / "cut"
    assert mgbench("compare", *FAKE_JOB, "--out", str(out)).returncode == 0
    text = (out / "compare.json").read_text()
    (out / "compare.json").write_text(text[: len(text) // 2])
    assert "cannot be read (cut short?)" in one_line_error(mgbench("compare", "--resume", str(out)))


def test_a_failed_row_starts_with_its_cause(tmp_path):
    out = tmp_path / "crash"
    done = mgbench("compare", *FAKE_JOB, "--strategies", "crash", "--out", str(out))
    assert done.returncode == 1
    error = read_rows(out).iloc[0].error
    assert error.splitlines()[0] == "RuntimeError: fake adapter crashed on purpose (exit code 1)"
    assert "failed fake crash x1: RuntimeError: fake adapter crashed on purpose" in " ".join(done.stderr.split())


def row(devices: int, rate: float, p10: float, p90: float) -> RunResult:
    config = RunConfig.flat("fake", "steady", "tiny", devices, "cpu", 8, 10)
    return RunResult.flat(config, "ok", samples_per_sec=rate, samples_per_sec_p10=p10, samples_per_sec_p90=p90)


def test_impossible_speed_ups_and_unsteady_rows_are_flagged():
    frame = results_frame([row(1, 15.9, 15.0, 16.5), row(2, 466.0, 300.0, 480.0)]).set_index("devices")
    assert frame.loc[1, "warning"] == ""
    assert frame.loc[2, "warning"].startswith("speed-up 29.31x exceeds the device ratio")
    assert "p10-p90 spans 39% of the steady rate" in frame.loc[2, "warning"]
    fine = results_frame([row(1, 100.0, 98.0, 101.0), row(2, 190.0, 185.0, 193.0)])
    assert list(fine.warning) == ["", ""]


def test_a_gpu_row_that_ran_without_cudnn_says_so():
    without, with_cudnn = row(1, 154.0, 153.0, 155.0), row(2, 300.0, 298.0, 301.0)
    without.origin.framework_versions = {"cupy": "14.2.0", "cudnn": "not used (cuDNN disabled)"}
    with_cudnn.origin.framework_versions = {"cudnn": "91300"}
    frame = results_frame([without, with_cudnn]).set_index("devices")
    assert frame.loc[1, "warning"] == (
        "cuDNN not used (cuDNN disabled): convolutions ran without it, unlike the other frameworks' GPU rows"
    )
    assert frame.loc[2, "warning"] == ""


def test_sigterm_leaves_no_launcher_and_no_launcher_files(tmp_path):
    """A 2-process DDP run under torchrun, stopped mid-run: when compare returns, nothing of it
    is alive and the temporary folder holds nothing torchrun left (torchelastic_*)."""
    out, scratch = tmp_path / "ddp", tmp_path / "tmp"
    scratch.mkdir()
    env = cli_env(TMPDIR=str(scratch))
    compare = endless_ddp_compare(out, env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # compare, torchrun and its worker, then a moment for the worker to be inside its steps
    assert wait_for(lambda: len(processes_naming(out)) == 3, 120), "the run never started"
    time.sleep(3)
    compare.send_signal(signal.SIGTERM)
    compare.communicate(timeout=60)
    assert compare.returncode == 130
    alive = [p for p in os.popen("ps -eo args").read().splitlines() if str(out) in p]
    assert alive == []
    assert os.listdir(scratch) == []


DATALOADER_FAILURE = """$ python -m torch.distributed.run --standalone --nproc-per-node=1 -m mgbench.worker --config c.json
mgbench: error: Caught UsageError in DataLoader worker process 0.
Original Traceback (most recent call last):
  File "mgbench/datasets/images.py", line 40, in open_image
    raise UsageError(f"cannot decode image {path}: {error}") from None
mgbench.core.errors.UsageError: cannot decode image /data/images/00000003_000.png: image file is truncated

E1123 torch/distributed/elastic/multiprocessing/api.py: failed (exitcode: 2)
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
"""


def test_the_cause_is_the_workers_own_error_not_the_one_relaying_it():
    assert failure_cause(DATALOADER_FAILURE, 1) == (
        "mgbench.core.errors.UsageError: cannot decode image /data/images/00000003_000.png: image file is truncated"
    )
    assert (
        failure_cause(
            "[1]<stderr>:ValueError: bad shard\nRuntimeError: Horovod detected that one or more processes exited", 1
        )
        == "ValueError: bad shard"
    )
    assert (
        failure_cause("mgbench: error: gluon trains in fp32 only, not bf16\n", 2)
        == "gluon trains in fp32 only, not bf16"
    )
    assert failure_cause("Segmentation fault\n", 139) == "exit code 139"
