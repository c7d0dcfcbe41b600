"""Keras 3 over PyTorch (`keras-torch`), run through the CLI in its own environment (.venvs/keras-torch).

Data parallelism is checked on CPU devices: torchrun starts one process per device, joined
over gloo. Two steps on 2 processes with global batch B must leave the same weights as two
steps on 1 process with B (`assert_two_devices_equal_one`). Two steps, because the pool cycles
two different batches: a rank training the wrong shard, or batches out of order, fails.
The parameter count of every model keras-torch builds is checked by tests/test_contract.py.
Its profiled window is PyTorch's (`TorchProcessAdapter.profile`): the breakdown is read the same way.
"""

import json

import numpy as np
import pytest
from conftest import (
    assert_compiled_equals_eager,
    assert_two_devices_equal_one,
    framework_python,
    max_difference,
    profiled_two_cpu_compare,
    saved_state,
)

from mgbench.measure.breakdown import CATEGORIES

TOLERANCE = 1e-5
JOB = dict(steps="2", data_format="channels_last")
"""NHWC batches, Keras' own layout, which its torch backend transposes around every convolution."""


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return tmp_path_factory.mktemp("keras-torch-runs")


@pytest.mark.slow
def test_two_processes_equal_one_on_the_same_global_batch(runs):
    framework_python("keras-torch")
    assert_two_devices_equal_one(runs, "keras-torch", "ddp", TOLERANCE, **JOB)


@pytest.mark.slow
def test_compiled_ddp_module_trains_as_the_eager_one(runs):
    """torch.compile through Keras' layers, of the DDP module, on 2 processes."""
    framework_python("keras-torch")
    row = assert_compiled_equals_eager(runs, "keras-torch", "ddp", 2, 4, TOLERANCE, data_format="channels_last")
    assert row.compiler == "torch.compile (default)"


@pytest.mark.slow
def test_bf16_trains_as_fp32_within_bfloat16_rounding(runs):
    """The mixed_bfloat16 policy on 2 processes: finite weights, closer to fp32's than a tenth
    of the distance fp32's moved."""
    framework_python("keras-torch")
    initial = saved_state(runs, "keras-torch", "ddp", 1, 8, 0.0, **JOB)
    fp32 = saved_state(runs, "keras-torch", "ddp", 2, 4, 0.5, **JOB)
    bf16 = saved_state(runs, "keras-torch", "ddp", 2, 4, 0.5, precision="bf16", **JOB)
    assert all(np.isfinite(v).all() for v in bf16.values())
    assert max_difference(bf16, fp32) < max_difference(fp32, initial) / 10


@pytest.mark.slow
def test_profiled_window_splits_each_ranks_step_as_pytorchs_does(tmp_path):
    """The same torch.profiler code as the PyTorch adapter's: every rank's operators and gloo
    all-reduce, inside the marked steps, make the row's breakdown."""
    framework_python("keras-torch")
    rows = profiled_two_cpu_compare(tmp_path / "prof", "keras-torch", "ddp")
    row = rows.loc[2]
    assert row["profile"]["communication_seconds"] > 0 and row["breakdown_clock"] == "cpu"
    assert row["bottleneck"] in CATEGORIES and sum(row["breakdown"].values()) == pytest.approx(1)
    merged = json.loads((tmp_path / "prof" / "profiles" / "keras-torch-ddp-2cpu" / "breakdown.json").read_text())
    assert sorted(merged["devices"]) == ["rank0/cpu", "rank1/cpu"]
