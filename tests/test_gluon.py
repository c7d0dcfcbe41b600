"""Gluon (MXNet) adapter, run in its own environment (`make env-gluon`); skipped when not built.

The equivalence test runs `mgbench run` as users do: one step with 2 `mx.cpu(i)` contexts on
global batch B leaves the same weights as 1 context on B, and the step moved the weights far
more than the two differ.
"""

import json

import pytest
from conftest import assert_two_devices_equal_one, framework_python, mgbench, run_in, tiny_job

ONE_STEP_ON_TWO_CONTEXTS = """
import json
from mgbench.common.config import RunConfig
from mgbench.frameworks.gluon.adapter import create_trainer
trainer = create_trainer("device")
info = trainer.setup(RunConfig(framework="gluon", strategy="device", model="tiny", devices=2, device_kind="cpu",
                               batch_per_device=4, steps=1, learning_rate=0.5))
trainer.train_step(next(trainer.batches()))
trainer.synchronize()
print(json.dumps({"contexts": trainer.placement.device_names, "difference": trainer.replica_difference(),
                  "loss": trainer.last_loss()}))
"""


@pytest.fixture(scope="module")
def gluon_python():
    return framework_python("gluon")


def test_weights_are_identical_on_every_context_after_a_step(gluon_python):
    result = json.loads(run_in(gluon_python, ONE_STEP_ON_TWO_CONTEXTS))
    assert result["contexts"] == ["cpu(0)", "cpu(1)"]
    assert result["loss"] > 0
    assert result["difference"] == 0.0


@pytest.mark.slow
def test_two_contexts_equal_one_context_on_the_same_global_batch(tmp_path, gluon_python):
    assert_two_devices_equal_one(tmp_path, "gluon", "device", 1e-5)


def test_compare_uses_the_gluon_environment_and_reports_nccl_on_cpu_unsupported(tmp_path, gluon_python):
    done = mgbench(
        "compare",
        "--frameworks",
        "gluon",
        "--strategies",
        "nccl",
        "--gpus",
        "2",
        *tiny_job(2, batch=2, device="cpu"),
        "--out",
        str(tmp_path / "c"),
    )
    rows = [json.loads(line) for line in (tmp_path / "c" / "results.jsonl").read_text().splitlines()]
    statuses = {row["devices"]: row["status"] for row in rows}
    assert statuses == {1: "ok", 2: "unsupported"}, done.stdout + done.stderr
    ok = next(row for row in rows if row["status"] == "ok")
    assert ok["interpreter"] == gluon_python
    assert ok["framework_versions"]["mxnet"] == "1.9.1"
