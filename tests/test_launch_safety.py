"""What mgbench's processes must never do: hide a worker's error behind its launcher's exit code,
import code from the user's working directory, or outlive the mgbench that started them."""

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from conftest import cli_env, endless_ddp_compare, processes_naming, read_rows, tiny_job, wait_for

from mgbench import worker
from mgbench.core.config import RunConfig
from mgbench.core.errors import UsageError
from mgbench.runner.orchestrator import failure_cause

HOSTILE_MODULES = ("numpy", "torch", "json")
HOSTILE = 'import os\nopen(os.path.join(os.path.dirname(__file__), f"imported-{__name__}-{os.getpid()}"), "w")\n'
"""A module that leaves a marker file beside itself when imported."""

TWO_CPU_DDP = [
    "--framework",
    "pytorch",
    "--strategy",
    "ddp",
    "--gpus",
    "2",
    *tiny_job(2, batch=4, image_size=32, device="cpu"),
]


def mgbench_in(folder: Path, *args: str, timeout: float = 600, **extra_env: str) -> subprocess.CompletedProcess:
    """`python -m mgbench ARGS` started from `folder`, as a user in that folder types it."""
    return subprocess.run(
        [sys.executable, "-m", "mgbench", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=cli_env(**extra_env),
    )


def kill_all(processes: list[psutil.Process]) -> None:
    for process in processes:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()


TORCHRUN_FAILURE = """$ python -m torch.distributed.run --standalone --nproc-per-node=2 -m mgbench.worker --config c.json
[rank0]: Traceback (most recent call last):
[rank0]:   File "<frozen runpy>", line 198, in _run_module_as_main
[rank0]:   File "/work/mgbench/training/driver.py", line 73, in step
[rank0]:     self.trainer.train_step(batch)
[rank0]:   File "/venv/lib/python3.11/site-packages/torch/optim/sgd.py", line 379, in _single_tensor_sgd
[rank0]:     param.add_(grad, alpha=-lr)
[rank0]: RuntimeError: value cannot be converted to type float without overflow
[rank1]: Traceback (most recent call last):
[rank1]:   File "<frozen runpy>", line 198, in _run_module_as_main
[rank1]:     param.add_(grad, alpha=-lr)
[rank1]: RuntimeError: value cannot be converted to type float without overflow
E1124 05:53:28.086000 10036 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) local_rank: 0 (pid: 10053) of binary: /venv/bin/python
Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/torch/distributed/launcher/api.py", line 386, in launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
mgbench.worker FAILED
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-24_05:53:28
  rank      : 0 (local_rank: 0)
  exitcode  : 1 (pid: 10053)
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""
"""The log of `mgbench run --framework pytorch --strategy ddp --gpus 2 --device cpu --lr 1e300`
(torch 2.14), its tracebacks shortened."""


def test_the_cause_under_torchrun_is_the_worker_s_exception_without_its_rank_prefix():
    overflow = "RuntimeError: value cannot be converted to type float without overflow"
    assert failure_cause(TORCHRUN_FAILURE, 1) == overflow
    assert failure_cause("[default1]:ValueError: bad shard\n", 1) == "ValueError: bad shard"
    assert failure_cause("[default0]:[rank0]: ValueError: bad shard\n", 1) == "ValueError: bad shard"
    assert failure_cause("[default1]:mgbench: error: no such file: x.csv\n[rank1]: ValueError: y\n", 2) == (
        "no such file: x.csv"
    )


GLOO_FOLLOW_ON = (
    "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [127.0.0.1]:29135"
)
NCCL_FOLLOW_ON = "torch.distributed.DistBackendError: NCCL communicator was aborted on rank 0."
LABELS_ERROR = "ValueError: labels.csv lacks the column 'Finding Labels'"
CHAIN = "\nDuring handling of the above exception, another exception occurred:\n\n"
FRAMES = 'Traceback (most recent call last):\n  File "/work/mgbench/training/driver.py", line 73, in step\n'


def rank_traceback(rank: int, *exceptions: str) -> str:
    """What torch.distributed prints for a rank that raised `exceptions`, each raised while
    handling the one before (a chain): every line prefixed `[rankN]: `."""
    text = CHAIN.join(f"{FRAMES}{exception}\n" for exception in exceptions)
    return "".join(f"[rank{rank}]: {line}\n" for line in text.splitlines())


CHILD_FAILED = "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\nRoot Cause:\n[1]:\n  rank: 1\n"


@pytest.mark.parametrize("follow_on", [GLOO_FOLLOW_ON, NCCL_FOLLOW_ON], ids=["gloo", "nccl"])
def test_the_cause_is_the_failed_rank_s_error_not_a_peer_s_follow_on_printed_before_or_after(follow_on):
    failed = rank_traceback(1, LABELS_ERROR)
    peer = rank_traceback(0, follow_on)
    assert failure_cause(failed + peer + CHILD_FAILED, 1) == LABELS_ERROR
    assert failure_cause(peer + failed + CHILD_FAILED, 1) == LABELS_ERROR
    assert failure_cause(peer + CHILD_FAILED, 1) == follow_on  # no other error: the follow-on is all there is


def test_of_a_rank_s_chained_exceptions_the_last_one_raised_is_the_cause():
    chained = rank_traceback(0, "KeyError: 'Finding Labels'", LABELS_ERROR)
    assert failure_cause(chained + rank_traceback(1, GLOO_FOLLOW_ON), 1) == LABELS_ERROR
    # A chain ending in a follow-on (the rank's collective failed while it handled its own
    # error) names the error it was handling.
    assert failure_cause(rank_traceback(0, LABELS_ERROR, GLOO_FOLLOW_ON), 1) == LABELS_ERROR


@pytest.mark.slow
def test_a_torchrun_worker_s_exception_is_the_first_line_of_its_row(tmp_path):
    pytest.importorskip("torch", reason="PyTorch is not installed")
    out = tmp_path / "overflow"
    done = mgbench_in(tmp_path, "run", *TWO_CPU_DDP, "--lr", "1e300", "--out", str(out))
    assert done.returncode == 1, done.stderr
    row = read_rows(out).iloc[0]
    assert row.status == "failed"
    assert row.error.splitlines()[0] == (
        "RuntimeError: value cannot be converted to type float without overflow (exit code 1)"
    )


def hostile_folder(tmp_path: Path, modules: tuple[str, ...] = HOSTILE_MODULES) -> Path:
    """A working directory holding modules that mark each import: by default `numpy.py` and
    `torch.py` (the CLI's and the workers' imports) and `json.py` (imported by the installation
    probes' `python -c`)."""
    folder = tmp_path / "cwd"
    folder.mkdir()
    for name in modules:
        (folder / f"{name}.py").write_text(HOSTILE)
    return folder


def test_python_m_mgbench_and_its_workers_import_nothing_from_the_working_directory(tmp_path):
    folder = hostile_folder(tmp_path)
    out = tmp_path / "fake"
    done = mgbench_in(folder, "compare", "--frameworks", "fake", "--gpus", "1", *tiny_job(4), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert sorted(path.name for path in folder.iterdir()) == ["json.py", "numpy.py", "torch.py"]
    assert list(read_rows(out).status) == ["ok"]


@pytest.mark.slow
def test_torchrun_and_its_workers_import_nothing_from_the_working_directory(tmp_path):
    pytest.importorskip("torch", reason="PyTorch is not installed")
    folder = hostile_folder(tmp_path)
    out = tmp_path / "ddp"
    done = mgbench_in(folder, "run", *TWO_CPU_DDP, "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert sorted(path.name for path in folder.iterdir()) == ["json.py", "numpy.py", "torch.py"]
    row = read_rows(out).iloc[0]
    assert (row.status, row.devices) == ("ok", 2)
    assert "torch.distributed.run" in row.command


@pytest.mark.slow
def test_setup_runs_venv_and_pip_without_the_working_directory(tmp_path):
    """`mgbench setup` from a folder holding a `venv.py` and a `pip.py`: the environment is made
    by the real venv, and the real pip fails (no index to install from) with one line."""
    folder = hostile_folder(tmp_path, ("venv", "pip"))
    venvs = tmp_path / "venvs"
    done = mgbench_in(folder, "setup", "pytorch", MGBENCH_VENVS=str(venvs), PIP_NO_INDEX="1")
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1].startswith("mgbench: error: setting up pytorch failed at: ")
    assert sorted(path.name for path in folder.iterdir()) == ["pip.py", "venv.py"]
    assert (venvs / "pytorch" / "bin" / "python").exists()


LAUNCHER = """
import subprocess, sys, time
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", sys.argv[1]], start_new_session=True)
time.sleep(600)
"""
"""A launcher that, like torchrun, starts its worker in a session of its own, then waits."""

KILLED_MGBENCH = """
import os, sys
from pathlib import Path
from mgbench.runner.launch import execute
execute([sys.executable, "-c", sys.argv[1], sys.argv[2]], dict(os.environ), 600, Path(sys.argv[3]))
"""
"""An mgbench process that launches LAUNCHER and waits for it (to be killed meanwhile)."""


def test_a_killed_mgbench_takes_the_launcher_and_its_workers_with_it(tmp_path):
    marker = tmp_path / "run-marker"
    mgbench = subprocess.Popen(
        [sys.executable, "-c", KILLED_MGBENCH, LAUNCHER, str(marker), str(tmp_path / "run.log")], env=cli_env()
    )
    try:
        assert wait_for(lambda: len(processes_naming(marker)) == 3, 60), "launcher and worker never started"
        run = [process for process in processes_naming(marker) if process.pid != mgbench.pid]
        mgbench.kill()
        mgbench.wait()
        assert wait_for(lambda: not processes_naming(marker), 10), [p.info["cmdline"] for p in run]
    finally:
        mgbench.kill()
        kill_all(processes_naming(marker))


@pytest.mark.slow
def test_a_sigkilled_compare_leaves_no_process_of_its_run(tmp_path):
    """SIGKILL during the compare's first run (DDP under torchrun, 1 CPU device): torchrun and the
    worker it started in a session of its own die with the compare."""
    pytest.importorskip("torch", reason="PyTorch is not installed")
    out = tmp_path / "ddp"
    compare = endless_ddp_compare(out, cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # compare, torchrun, the worker torchrun started
        assert wait_for(lambda: len(processes_naming(out)) == 3, 120), "the run never started"
        compare.send_signal(signal.SIGKILL)
        compare.wait()
        assert wait_for(lambda: not processes_naming(out), 10), [p.info["cmdline"] for p in processes_naming(out)]
    finally:
        compare.kill()
        kill_all(processes_naming(out))


def test_a_workers_refusal_is_the_one_error_line_showing_a_name_as_the_os_does(tmp_path, monkeypatch, capsys):
    """A worker refuses through the command line's one error printer: exit 2 and one line, a
    name's byte that is not UTF-8 shown as `\\xff`, not the surrogate Python holds it as."""
    odd = os.fsdecode(b"/data/r\xff")

    def refuse(*_: object) -> None:
        raise UsageError(f"{odd} does not exist")

    monkeypatch.setattr(worker, "train", refuse)
    config = tmp_path / "config.json"
    config.write_text(RunConfig.flat("fake", "steady", "tiny", 1, "cpu", 2, 2).to_json())
    assert worker.main(["--config", str(config), "--result-file", str(tmp_path / "row.json")]) == 2
    assert capsys.readouterr().err == "mgbench: error: /data/r\\xff does not exist\n"
