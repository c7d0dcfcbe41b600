"""`--profile STEPS`: op classification, the window running after the timed steps (clocked and
marked step by step), and torch traces split into each rank's breakdown."""

import json
import time
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import pytest
from conftest import profiled_two_cpu_compare

from mgbench.cli.options import AUTO_PROFILE_STEPS, profile_option, profile_steps
from mgbench.core.config import RunConfig
from mgbench.core.kinds import DeviceKind
from mgbench.core.models import model_spec
from mgbench.measure.breakdown import CATEGORIES, device_times, mean_shares
from mgbench.measure.timing import HOST_PHASES
from mgbench.measure.trace_events import STEP_MARK, torch_trace_window, xla_device_events, xla_trace_window
from mgbench.training.driver import run_training
from mgbench.training.profiling import OpTime, self_time_ops, summarise_ops

OPS = [
    OpTime("aten::convolution", 0.6, 4),
    OpTime("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 0.2, 2),
    OpTime("c10d::allreduce_", 0.05, 2),
    OpTime("Memcpy HtoD (Pinned -> Device)", 0.1, 2),
    OpTime("aten::copy_", 0.05, 6),
]

PROFILER_SECONDS = 0.05


def test_self_time_subtracts_nested_ops_on_their_own_line_only():
    spans = [
        ("thread 1", 0.0, 10.0, "step"),
        ("thread 1", 1.0, 4.0, "conv"),
        ("thread 1", 2.0, 3.0, "copy"),
        ("thread 1", 5.0, 7.0, "conv"),
        ("thread 1", 9.0, 12.0, "spill"),
        ("thread 2", 1.0, 6.0, "allreduce"),
        ("stream 7", 0.5, 1.5, "kernel"),
        ("stream 7", 1.5, 2.0, "kernel"),
    ]
    ops = {op.name: (op.self_seconds, op.calls) for op in self_time_ops(spans)}

    assert ops == {
        "step": (pytest.approx(10 - 3 - 2 - 1), 1),
        "conv": (pytest.approx(3 - 1 + 2), 2),
        "copy": (pytest.approx(1), 1),
        "spill": (pytest.approx(3), 1),
        "allreduce": (pytest.approx(5), 1),
        "kernel": (pytest.approx(1.5), 2),
    }


def test_summary_splits_communication_and_input_copies():
    summary = summarise_ops(OPS, 2, Path("t.json"), "device")
    assert summary["total_self_seconds"] == pytest.approx(1.0)
    assert summary["communication_seconds"] == pytest.approx(0.25)
    assert summary["communication_share"] == pytest.approx(0.25)
    assert summary["input_copy_seconds"] == pytest.approx(0.15)
    assert [op["name"] for op in summary["top_ops"]][:2] == [
        "aten::convolution",
        "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
    ]
    assert summary["steps"] == 2 and summary["clock"] == "device" and summary["trace"] == "t.json"


def xla_gpu_trace():
    """An XLA profiler trace of two GPUs as JAX exports it: per device, stream lines with the
    kernels and a derived line that repeats them; the host's own process beside them."""
    meta = [
        {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/host:CPU"}},
        {"ph": "M", "pid": 2, "name": "process_name", "args": {"name": "/device:GPU:0"}},
        {"ph": "M", "pid": 3, "name": "process_name", "args": {"name": "/device:GPU:1"}},
    ] + [
        {"ph": "M", "pid": pid, "tid": tid, "name": "thread_name", "args": {"name": line}}
        for pid in (2, 3)
        for tid, line in ((7, "Stream #7(Compute)"), (9, "Stream #9(Nccl)"), (90, "XLA Ops"))
    ]
    kernels = [
        {"ph": "X", "pid": pid, "tid": tid, "ts": ts, "dur": dur, "name": name}
        for pid in (2, 3)
        for tid, ts, dur, name in (
            (7, 0, 300, "sm90_xmma_fprop"),
            (7, 300, 100, "loop_fusion"),
            (9, 250, 200, "ncclDevKernel_AllReduce_Sum_f32_RING_LL"),
            (90, 0, 450, "fusion.3"),
        )
    ]
    host = [{"ph": "X", "pid": 1, "tid": 5, "ts": 0, "dur": 999, "name": "PjitFunction(step)", "args": {"hlo_op": "x"}}]
    return {"traceEvents": meta + kernels + host}


def test_xla_gpu_trace_counts_each_kernel_once_per_device_on_its_streams():
    by_device = xla_device_events(xla_gpu_trace())
    assert sorted(by_device) == ["/device:GPU:0", "/device:GPU:1"]
    assert sorted(e["name"] for e in by_device["/device:GPU:1"]) == [
        "loop_fusion",
        "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
        "sm90_xmma_fprop",
    ]
    window = xla_trace_window(xla_gpu_trace())
    assert window.clock == "device"
    summary = summarise_ops(self_time_ops(window.ops), 1, Path("t.json"), window.clock)
    assert summary["total_self_seconds"] == pytest.approx(2 * 600e-6)
    assert summary["communication_seconds"] == pytest.approx(2 * 200e-6)
    assert {op["name"]: op["calls"] for op in summary["top_ops"]}["sm90_xmma_fprop"] == 2


def test_xla_cpu_trace_takes_the_ops_host_threads_ran_per_device_ordinal():
    op = {"ph": "X", "pid": 1, "tid": 4, "ts": 0, "dur": 50}
    trace = {
        "traceEvents": [
            {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/host:CPU"}},
            dict(op, name="all-reduce", args={"hlo_op": "all-reduce", "device_ordinal": "0"}),
            dict(op, name="wrapped_broadcast.1", args={"hlo_op": "wrapped_broadcast.1", "device_ordinal": "1"}),
            dict(op, name="ThunkExecutor::Execute", args={"device_ordinal": "1"}),
        ]
    }
    assert {device: len(events) for device, events in xla_device_events(trace).items()} == {"cpu:0": 1, "cpu:1": 1}
    window = xla_trace_window(trace)
    summary = summarise_ops(self_time_ops(window.ops), 1, Path("t.json"), window.clock)
    # XLA's element-wise broadcast is compute, not a collective.
    assert window.clock == "cpu" and summary["communication_seconds"] == pytest.approx(50e-6)


def profiling_fake(fakefw):
    """The fake adapter with a profiler: each step mark and each train step (as a GPU kernel)
    recorded on the real clock into a torch.profiler-style trace."""

    class Profiling(fakefw.FakeAdapter):
        recorded: list = []

        def train_step(self, batch):
            start = time.perf_counter()
            super().train_step(batch)
            self.recorded.append(("kernel", "step_kernel", start, time.perf_counter()))

        def profile(self, run_steps, trace_path):
            self.recorded = []

            @contextmanager
            def mark():
                start = time.perf_counter()
                yield
                self.recorded.append(("user_annotation", STEP_MARK, start, time.perf_counter()))

            run_steps(mark)
            events = [
                {
                    "ph": "X",
                    "cat": cat,
                    "name": name,
                    "ts": start * 1e6,
                    "dur": (end - start) * 1e6,
                    "args": {"device": 0},
                }
                for cat, name, start, end in self.recorded
            ]
            trace_path.write_text(json.dumps({"traceEvents": [dict(e, pid=0, tid=7) for e in events]}))

    return Profiling("steady")


def test_window_runs_after_the_timed_steps_under_the_adapters_profiler(fake_plugin, tmp_path):
    import fakefw

    adapter = profiling_fake(fakefw)
    write_trace = adapter.profile

    def slow_profiler(run_steps, trace_path):  # a profiler that takes PROFILER_SECONDS to stop
        write_trace(run_steps, trace_path)
        time.sleep(PROFILER_SECONDS)

    adapter.profile = slow_profiler
    config = RunConfig.flat("fake", "steady", "tiny", 1, "cpu", 4, 8, profile_steps=3)
    result = run_training(adapter, config, profile_dir=tmp_path, profiler="torch.profiler")
    assert len(result.series.step_seconds) == 8  # timing untouched by the window
    assert adapter.steps_done == 8 + 3  # the window's steps ran after the timed ones
    kernels = [end - start for cat, _, start, end in adapter.recorded if cat == "kernel"]
    # The op summary is read from the trace the adapter wrote: its kernels, on the device clock.
    assert result.profiled.profile["clock"] == "device" and result.profiled.profile["communication_share"] == 0
    assert result.profiled.profile["top_ops"] == [
        {"name": "step_kernel", "calls": 3, "self_seconds": pytest.approx(sum(kernels))}
    ]
    assert result.profiled.profile["kernels_per_step"] == 1  # the fake's one kernel per step
    assert (tmp_path / "rank0-trace.json").exists() and result.profiled.profile["trace"] == str(
        tmp_path / "rank0-trace.json"
    )
    kept = json.loads((tmp_path / "rank0-breakdown.json").read_text())
    assert kept["window_source"] == "step marks" and len(kept["step_spans"]) == 3
    assert kept["input_wait_seconds"] >= 3 * fakefw.INPUT_SECONDS  # the driver's clock of the window's waits
    seconds, shares = kept["devices"]["cuda:0"]["seconds"], kept["devices"]["cuda:0"]["shares"]
    kernels = sum(end - start for cat, _, start, end in adapter.recorded if cat == "kernel")
    assert seconds["compute"] == pytest.approx(kernels) and seconds["window"] == pytest.approx(kept["window_seconds"])
    window_shares = kept["devices"]["cuda:0"]["window_shares"]
    assert window_shares["compute"] == pytest.approx(kernels / kept["window_seconds"])
    assert window_shares["input_wait"] == pytest.approx(kept["input_wait_seconds"] / kept["window_seconds"])
    # The row's shares are of the timed step: the kernel time per profiled step over the timed median.
    assert kept["timed_step"]["seconds"] == pytest.approx(result.timing.median_step_seconds)
    assert shares["compute"] == pytest.approx(kernels / 3 / result.timing.median_step_seconds)
    assert shares["input_wait"] == pytest.approx(result.input.input_wait_fraction)
    window_step = sum(end - start for cat, _, start, end in adapter.recorded if cat == "user_annotation") / 3
    assert result.profiled.profile["window_slowdown"] == pytest.approx(
        window_step / result.timing.median_step_seconds, rel=0.05
    )
    assert sum(shares.values()) == pytest.approx(1) and sum(window_shares.values()) == pytest.approx(1)
    assert result.profiled.profile_seconds >= kept["window_seconds"]
    # Where the window's time went: its steps (each waits for its batch), the profiler, the reading.
    cost = result.profiled.profile["cost_seconds"]
    assert set(cost) == {"steps", "profiler", "read", "analysis"} and min(cost.values()) >= 0
    assert cost["steps"] >= 3 * fakefw.INPUT_SECONDS and cost["profiler"] >= PROFILER_SECONDS
    assert sum(cost.values()) <= result.profiled.profile_seconds


@pytest.mark.parametrize(
    "option, kind, epochs, steps",
    [
        ("auto", "cuda", None, AUTO_PROFILE_STEPS),
        ("auto", "cpu", None, 0),
        ("auto", "cuda", 2, 0),
        ("0", "cuda", None, 0),
        ("3", "cpu", None, 3),
    ],
)
def test_profile_defaults_to_a_window_on_gpus_only(option, kind, epochs, steps):
    assert profile_steps(profile_option(option), DeviceKind(kind), epochs) == steps


def test_a_failing_profiler_costs_the_window_not_the_measured_run(fake_plugin, tmp_path):
    import fakefw

    class BrokenProfiler(fakefw.FakeAdapter):
        def profile(self, run_steps, trace_path):
            run_steps()
            raise AttributeError("'_KinetoEvent' object has no attribute 'activity_type'")

    config = RunConfig.flat("fake", "steady", "tiny", 1, "cpu", 4, 6, profile_steps=2)
    result = run_training(BrokenProfiler("steady"), config, profile_dir=tmp_path, profiler="torch.profiler")
    assert result.status == "ok" and len(result.series.step_seconds) == 6 and result.timing.samples_per_sec > 0
    assert result.profiled.profile == {
        "steps": 2,
        "error": "profiler failed: AttributeError: '_KinetoEvent' object has no attribute 'activity_type'",
    }
    assert result.profiled.breakdown is None


def test_an_unreadable_trace_or_an_unknown_profiler_costs_only_the_window(fake_plugin, tmp_path):
    import fakefw

    class NamelessKernels(fakefw.FakeAdapter):
        def profile(self, run_steps, trace_path):
            run_steps()
            trace_path.write_text(json.dumps({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 0, "dur": 5}]}))

    config = RunConfig.flat("fake", "steady", "tiny", 1, "cpu", 4, 6, profile_steps=2)
    result = run_training(NamelessKernels("steady"), config, profile_dir=tmp_path, profiler="torch.profiler")
    assert result.status == "ok" and len(result.series.step_seconds) == 6
    assert result.profiled.profile == {
        "steps": 2,
        "trace": str(tmp_path / "rank0-trace.json"),
        "error": "trace unreadable: KeyError: 'name'",
    }
    unknown = run_training(NamelessKernels("steady"), config, profile_dir=tmp_path / "u", profiler="someprofiler")
    assert unknown.profiled.profile == {"steps": 0, "error": "no trace reader for someprofiler"}
    assert unknown.status == "ok" and len(unknown.series.step_seconds) == 6


def test_an_adapter_without_profiler_says_so(fake_plugin, tmp_path):
    import fakefw

    config = RunConfig.flat("fake", "steady", "tiny", 1, "cpu", 4, 5, profile_steps=3)
    result = run_training(fakefw.create_adapter("steady"), config, profile_dir=tmp_path)
    assert result.status == "ok"
    assert result.profiled.profile == {"steps": 0, "error": "fake has no profiler here"}
    assert result.profiled.breakdown is None and not list(tmp_path.iterdir())


def test_pytorch_ddp_profile_traces_every_rank_counts_the_allreduce_and_splits_the_step(tmp_path):
    pytest.importorskip("torch", reason="PyTorch is not installed")
    from mgbench.frameworks.pytorch.flops import count_work

    out = tmp_path / "prof"
    rows = profiled_two_cpu_compare(out, "pytorch", "ddp", timeout=300)
    profile = rows.loc[2, "profile"]
    assert profile["steps"] == 2 and profile["clock"] == "cpu"
    folder = out / "profiles" / "pytorch-ddp-2cpu"
    traces = {"rank0-trace.json", "rank1-trace.json", "rank0-breakdown.json", "rank1-breakdown.json", "breakdown.json"}
    assert {p.name for p in folder.iterdir()} == traces
    assert json.loads(Path(profile["trace"]).read_text())["traceEvents"]
    assert profile["communication_seconds"] > 0  # the gloo all-reduce of DDP
    assert 0 < profile["communication_share"] < 1
    top = profile["top_ops"]
    assert top and all(op["self_seconds"] >= 0 for op in top)
    assert top == sorted(top, key=lambda op: op["self_seconds"], reverse=True)
    summary = pd.read_csv(out / "summary.csv").set_index("devices")
    assert summary.loc[2, "profile_communication_fraction"] == pytest.approx(profile["communication_share"])
    for devices in (1, 2):
        row = rows.loc[devices]
        assert row["breakdown_clock"] == "cpu" and row["bottleneck"] in CATEGORIES and row["profile_seconds"] > 0
        assert set(row["breakdown"]) == set(CATEGORIES) and sum(row["breakdown"].values()) == pytest.approx(1)
        assert summary.loc[devices, "breakdown_compute_fraction"] == pytest.approx(row["breakdown"]["compute"])
    merged = json.loads((folder / "breakdown.json").read_text())
    assert sorted(merged["devices"]) == ["rank0/cpu", "rank1/cpu"]
    for rank in (0, 1):
        kept = json.loads((folder / f"rank{rank}-breakdown.json").read_text())
        assert kept["window_source"] == "step marks" and len(kept["step_spans"]) == 2
        times = device_times(
            [tuple(i) for i in kept["devices"]["cpu"]["intervals"]], [tuple(s) for s in kept["step_spans"]]
        )
        assert times.compute > 0 and times.to_dict() == pytest.approx(kept["devices"]["cpu"]["seconds"])
    assert rows.loc[2, "breakdown"] == pytest.approx(mean_shares(d["shares"] for d in merged["devices"].values()))
    assert "(CPU trace)" in (out / "summary.md").read_text()
    # Every CPU row also says where the host's time went, and how much work it did.
    for devices in (1, 2):
        row = rows.loc[devices]
        assert row["timing_method"] == "per-step sync" and row["profile"]["kernels_per_step"] > 0
        assert set(row["host_breakdown"]) == set(HOST_PHASES)
        assert sum(row["host_breakdown"].values()) == pytest.approx(1) and row["host_breakdown"]["step"] > 0.5
        assert row["flops_per_sample"] == count_work(model_spec("tiny"), 32).flops_per_sample
        assert row["achieved_tflops"] == pytest.approx(row["flops_per_sample"] * row["samples_per_sec"] / 1e12)


def test_torch_op_summary_from_the_exported_trace_agrees_with_torchs_own_self_times(tmp_path):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")

    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(144, 2))
    batch = torch.randn(2, 3, 8, 8)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profiler:
        for _ in range(2):
            with torch.profiler.record_function(STEP_MARK):
                model(batch).sum().backward()
    profiler.export_chrome_trace(str(tmp_path / "trace.json"))
    window = torch_trace_window(json.loads((tmp_path / "trace.json").read_text()))
    ours = {op.name: op.self_seconds for op in self_time_ops(window.ops)}
    theirs = {event.key: event.self_cpu_time_total / 1e6 for event in profiler.key_averages()}

    assert window.clock == "cpu" and set(ours) == set(theirs) and "aten::convolution" in ours
    assert ours == pytest.approx(theirs, abs=1e-4)
