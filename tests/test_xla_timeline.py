"""benchmarks/xla_trace_timeline.py: the per-GPU step breakdown BENCHMARKS.md quotes."""

import pytest
from conftest import benchmark_script


@pytest.fixture(scope="module")
def timeline():
    return benchmark_script("xla_trace_timeline")


def kernel(ts, dur, name="loop_fusion"):
    return {"ph": "X", "ts": ts, "dur": dur, "name": name}


def test_two_steps_split_into_compute_exposed_all_reduce_and_idle(timeline):
    nccl = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
    events = [
        kernel(0, 300),
        kernel(300, 100),
        kernel(250, 200, nccl),  # step 1: all-reduce overlaps 150 us
        kernel(1000, 300),
        kernel(1300, 50, nccl),  # step 2, after a 550 us gap: all-reduce alone
        kernel(1100, 100),  # concurrent with the step's first kernel
    ]
    row = timeline.device_breakdown(events, steps=2)
    assert row["window"] == pytest.approx(1.350 / 2)
    assert row["compute"] == pytest.approx((0.400 + 0.300) / 2)
    assert row["compute_sum"] == pytest.approx((0.300 + 0.100 + 0.300 + 0.100) / 2)
    assert row["comm_sum"] == pytest.approx((0.200 + 0.050) / 2)
    assert row["comm_exposed"] == pytest.approx((0.050 + 0.050) / 2)
    assert row["idle"] == pytest.approx(0.550 / 2)
    assert row["largest_gaps_ms"] == [0.55]
    assert row["kernels"] == 3


def test_host_launch_time_is_per_launching_thread_per_step(timeline):
    trace = {
        "traceEvents": [
            {"ph": "M", "pid": 9, "tid": 1, "name": "thread_name", "args": {"name": "py_xla_execute/a"}},
            {"ph": "M", "pid": 9, "tid": 2, "name": "thread_name", "args": {"name": "py_xla_execute/b"}},
            {"ph": "X", "pid": 9, "tid": 1, "ts": 0, "dur": 4000, "name": "[0] GpuExecutable::ExecuteThunks"},
            {"ph": "X", "pid": 9, "tid": 1, "ts": 9000, "dur": 6000, "name": "[0] GpuExecutable::ExecuteThunks"},
            {"ph": "X", "pid": 9, "tid": 2, "ts": 0, "dur": 8000, "name": "[1] GpuExecutable::ExecuteThunks"},
            {"ph": "X", "pid": 9, "tid": 2, "ts": 0, "dur": 9000, "name": "command_buffer::update"},
        ]
    }
    assert timeline.host_launch_ms(trace, steps=2) == {"py_xla_execute/a": 5.0, "py_xla_execute/b": 4.0}
