"""Multi-node launch: the launchers' command lines, host lists (incl. Slurm), and a real compare
over two "hosts" that are both this machine (torchrun c10d rendezvous, gloo, CPU)."""

import os

import pandas as pd
import pytest
from conftest import mgbench, tiny_job

from mgbench.core.config import RunConfig
from mgbench.core.errors import UsageError
from mgbench.frameworks.registry import BUILTIN
from mgbench.records.runfolder import RunFolder
from mgbench.runner.hosts import Host, expand_nodelist, parse_hosts, resolve_hosts, slurm_hosts
from mgbench.runner.launch import launched_by_launcher, node_argv
from mgbench.runner.launchers import LAUNCHERS, RUN_ENTRY, Launch, NodeCommand, launcher_for
from mgbench.runner.orchestrator import execute_run
from mgbench.runner.plan import PlannedRun

HOSTS = [Host("node1", 4), Host("node2", 4)]
ARGS = ["--config", "c.json"]


def test_parse_hosts_and_local_detection():
    assert parse_hosts("node1:4, node2:4") == HOSTS
    assert Host("localhost", 1).is_local and Host("127.0.0.1", 1).is_local and not Host("node1", 1).is_local
    for bad in ("node1", "node1:0", "node1:x", "a:1,a:1", ""):
        with pytest.raises(UsageError):
            parse_hosts(bad)


def test_slurm_allocation_becomes_hosts(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")  # no scontrol: the built-in expansion
    assert expand_nodelist("gpu[01-03,07],login1") == ["gpu01", "gpu02", "gpu03", "gpu07", "login1"]
    env = {"SLURM_JOB_NODELIST": "gpu[1-2]", "SLURM_NTASKS_PER_NODE": "4(x2)"}
    assert slurm_hosts(env) == [Host("gpu1", 4), Host("gpu2", 4)]
    with pytest.raises(UsageError, match="SLURM_JOB_NODELIST"):
        slurm_hosts({})
    with pytest.raises(UsageError, match="same slot count"):
        resolve_hosts("a:4,b:2")


def test_torchrun_one_agent_per_node_with_c10d_rendezvous_on_the_first_host():
    nodes = launcher_for("torchrun").node_commands(Launch("py", ARGS, run_id="run-1", port=29400), HOSTS)
    assert [node.host for node in nodes] == HOSTS
    for node in nodes:
        assert node.argv == [
            "py",
            "-m",
            "torch.distributed.run",
            "--nnodes=2",
            "--nproc-per-node=4",
            "--rdzv-backend=c10d",
            "--rdzv-endpoint=node1:29400",
            "--rdzv-id=run-1",
            *RUN_ENTRY,
            *ARGS,
        ]


def test_horovodrun_takes_the_host_list_itself():
    (node,) = launcher_for("horovodrun").node_commands(Launch("py", ARGS, run_id="run-1", port=29400), HOSTS)
    assert node.host is None
    assert node.argv == [
        "py",
        "-m",
        "horovod.runner.launch",
        "-np",
        "8",
        "-H",
        "node1:4,node2:4",
        "py",
        *RUN_ENTRY,
        *ARGS,
    ]


def test_mpiexec_takes_the_host_list_itself_and_on_one_host_none():
    (node,) = launcher_for("mpirun").node_commands(Launch("py", ARGS, run_id="run-1", port=29400), HOSTS)
    assert node.host is None
    assert node.argv[node.argv.index("-n") :] == ["-n", "8", "-H", "node1:4,node2:4", "py", *RUN_ENTRY, *ARGS]
    alone = launcher_for("mpirun").command(Launch("py", ARGS), 2)
    assert alone[alone.index("-n") :] == ["-n", "2", "py", *RUN_ENTRY, *ARGS]


def test_the_in_process_launcher_starts_the_worker_itself_and_never_over_hosts():
    launcher = launcher_for("inprocess")
    assert launcher.one_process
    assert launcher.command(Launch("py", ARGS), 4) == ["py", *RUN_ENTRY, *ARGS]
    with pytest.raises(ValueError, match="cannot span hosts"):
        launcher.node_commands(Launch("py", ARGS, run_id="run-1", port=29400), HOSTS)


def test_a_process_knows_it_runs_under_a_launcher_by_that_launchers_markers(monkeypatch):
    markers = [marker for launcher in LAUNCHERS.values() for marker in launcher.markers]
    for marker in markers:
        monkeypatch.delenv(marker, raising=False)
    assert markers and not launched_by_launcher()
    for marker in markers:
        monkeypatch.setenv(marker, "1")
        assert launched_by_launcher(), marker
        monkeypatch.delenv(marker)


def test_a_launcher_no_object_has_is_one_usage_error_naming_the_launchers():
    with pytest.raises(UsageError, match="no launcher 'tf-multiworker'") as refused:
        launcher_for("tf-multiworker")
    assert all(key in str(refused.value) for key in LAUNCHERS)


def test_a_one_process_strategy_asked_to_span_hosts_is_unsupported_without_launching(tmp_path):
    spec, strategy = next(
        (spec, strategy)
        for spec in BUILTIN
        for strategy in spec.strategies
        if launcher_for(strategy.launcher).one_process
    )
    config = RunConfig.flat(spec.name, strategy.name, "tiny", 8, "cuda", 1, 1)
    folder = RunFolder(tmp_path / "run")
    row = execute_run(PlannedRun(config, spec, strategy), folder, timeout=1, hosts=HOSTS)
    assert row.status == "unsupported" and "cannot span hosts" in row.error
    assert not folder.root.exists()


def test_remote_nodes_go_through_ssh_with_their_environment_local_ones_directly():
    env = {"MGBENCH_LAUNCH_TIME": "1.5", "OMP_NUM_THREADS": "2", "HOME": "/root"}
    remote = NodeCommand(Host("node2", 4), ["py", "-m", "mgbench", "run"])
    argv, _ = node_argv(remote, env)
    assert argv[:4] == ["ssh", "-o", "BatchMode=yes", "node2"]
    assert argv[4] == f"cd {os.getcwd()} && env MGBENCH_LAUNCH_TIME=1.5 OMP_NUM_THREADS=2 py -m mgbench run"
    local = NodeCommand(Host("localhost", 4), ["py"])
    assert node_argv(local, env) == (["py"], env)


def test_compare_over_two_local_hosts_runs_ddp_across_them(tmp_path):
    pytest.importorskip("torch", reason="PyTorch is not installed")
    out = tmp_path / "hosts"
    done = mgbench(
        "compare",
        "--frameworks",
        "pytorch",
        "--strategies",
        "ddp",
        "--hosts",
        "localhost:1,127.0.0.1:1",
        "--gpus",
        "2",
        *tiny_job(4, batch=4, image_size=32, device="cpu"),
        "--timeout",
        "180",
        "--out",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    rows = pd.read_json(out / "results.jsonl", lines=True).set_index("devices")
    assert rows.loc[2, "status"] == "ok" and rows.loc[2, "global_batch"] == 8
    assert rows.loc[2, "command"].count("--nnodes=2") == 2  # one torchrun agent per host
    assert "--standalone" in rows.loc[1, "command"]  # the 1-device run stays on this machine
