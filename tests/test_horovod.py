"""Horovod adapter: data-parallel equivalence under horovodrun (gloo, CPU), one host and two
(on GPUs, through NCCL: tests/test_gpu_data_parallel.py).

Runs through the CLI with the `.venvs/horovod` interpreter, which the orchestrator picks by
itself; the CPU tests are skipped, with the reason, where that environment was not built
(`make env-horovod`). One step on 2 processes with global batch B must leave the weights one
process leaves on B (which must also equal the PyTorch adapter's, the same job without Horovod),
and the step must move the weights far more than those differences.
"""

import subprocess

import pytest
from conftest import (
    assert_two_devices_equal_one,
    cli_env,
    load_state,
    max_difference,
    mgbench,
    one_epoch_rows,
    read_rows,
    saved_state,
    state_run_args,
    tiny_job,
)

from mgbench.frameworks.registry import framework_spec
from mgbench.runner.launch import environment_python

PYTHON = environment_python(framework_spec("horovod"))
LR = 0.5

pytestmark = pytest.mark.slow
needs_environment = pytest.mark.skipif(
    not PYTHON.exists(), reason=f"horovod environment not built ({PYTHON} missing): make env-horovod"
)


@pytest.fixture(scope="module")
def single(tmp_path_factory) -> dict:
    """One horovod process on the global batch of 8."""
    return saved_state(tmp_path_factory.mktemp("single"), "horovod", "hvd", 1, 8, LR)


@needs_environment
def test_two_processes_equal_one_process_on_the_same_global_batch(tmp_path, single):
    initial = saved_state(tmp_path, "horovod", "hvd", 1, 8, 0.0)
    double = saved_state(tmp_path, "horovod", "hvd", 2, 4, LR)
    ddp = saved_state(tmp_path, "pytorch", "ddp", 1, 8, LR)
    moved = max_difference(single, initial)
    assert moved > 1e-3
    assert max_difference(single, double) < 1e-6 < moved
    assert max_difference(single, ddp) < 1e-6


TWO_HOSTS = ["-np", "2", "-H", "localhost:1,127.0.0.1:1", "--gloo"]


def horovodrun(*command: str) -> str:
    done = subprocess.run(
        [str(PYTHON), "-m", "horovod.runner.launch", *command],
        capture_output=True,
        text=True,
        timeout=300,
        env=cli_env(OMP_NUM_THREADS="1"),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@needs_environment
def test_channels_last_two_processes_equal_one_process(tmp_path):
    """channels_last weights and gradients, which Horovod exchanges as contiguous copies."""
    assert_two_devices_equal_one(tmp_path, "horovod", "hvd", 1e-6, data_format="channels_last")


@needs_environment
def test_two_host_names_for_this_machine_make_two_nodes():
    """Horovod sees localhost and 127.0.0.1 as two hosts (cross size 2), and starts both without ssh."""
    probe = "import horovod.torch as hvd; hvd.init(); print('topology', hvd.local_size(), hvd.cross_size())"
    output = horovodrun(*TWO_HOSTS, str(PYTHON), "-c", probe)
    assert output.count("topology 1 2") == 2, output


@needs_environment
def test_two_hosts_on_localhost_equal_one_process(tmp_path, single):
    """`horovodrun -H` over the two 'nodes', one process each, `mgbench run` started by hand."""
    state = tmp_path / "hosts.npz"
    horovodrun(*TWO_HOSTS, str(PYTHON), "-m", "mgbench", *state_run_args(state, "horovod", "hvd", 2, 4, LR))
    assert max_difference(single, load_state(state)) < 1e-6


@needs_environment
def test_one_epoch_of_the_sample_through_torchs_loader_under_horovod(tmp_path):
    sample = tmp_path / "sample"
    assert mgbench("make-sample-chestxray", str(sample), "--n", "64", "--size", "38").returncode == 0
    one_epoch_rows("horovod", "hvd", sample, tmp_path / "run")


@needs_environment
@pytest.mark.parametrize(
    "settings, named", [({}, "Horovod's defaults"), ({"HOROVOD_CYCLE_TIME": "0.1"}, "HOROVOD_CYCLE_TIME=0.1")]
)
def test_a_row_names_the_horovod_settings_it_ran_under(tmp_path, settings, named):
    done = mgbench("run", "--framework", "horovod", "--gpus", "1", *tiny_job(2), "--out", str(tmp_path), **settings)
    assert done.returncode == 0, done.stdout + done.stderr
    assert read_rows(tmp_path).iloc[0].framework_versions["horovod_settings"] == named
