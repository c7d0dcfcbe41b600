"""Multi-node PyTorch DDP: two torchrun 'nodes' on this machine meeting through c10d rendezvous.

Each node is its own `torchrun --nnodes 2 --node-rank R --nproc-per-node 1` process, as on two
machines; together they must leave the weights one process leaves on the same global batch.
"""

import socket
import subprocess
import sys

import pytest
from conftest import cli_env, load_state, max_difference, saved_state, state_run_args

LR = 0.5


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        return probe.getsockname()[1]


@pytest.mark.slow
def test_two_torchrun_nodes_equal_one_process_on_the_same_global_batch(tmp_path):
    single = saved_state(tmp_path, "pytorch", "ddp", 1, 8, LR)
    state = tmp_path / "nodes.npz"
    port = free_port()
    nodes = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "torch.distributed.run",
                "--nnodes",
                "2",
                "--node-rank",
                str(rank),
                "--nproc-per-node",
                "1",
                "--rdzv-backend",
                "c10d",
                "--rdzv-endpoint",
                f"localhost:{port}",
                "--rdzv-id",
                "mgbench-test",
                "-m",
                "mgbench",
                *state_run_args(state, "pytorch", "ddp", 2, 4, LR),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=cli_env(OMP_NUM_THREADS="1"),
        )
        for rank in (0, 1)
    ]
    try:
        outputs = [node.communicate(timeout=300)[0] for node in nodes]
    finally:
        for node in nodes:
            node.kill()
    assert [node.returncode for node in nodes] == [0, 0], "\n".join(outputs)
    assert max_difference(single, load_state(state)) < 1e-6
