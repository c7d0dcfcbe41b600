"""The step-time breakdown: interval arithmetic, trace reading, the per-rank and per-run files, the
bottleneck rule. Traces are constructed with known intervals, so every share is known exactly."""

import json
import random
from itertools import pairwise

import pytest

from mgbench.core.config import RunConfig
from mgbench.measure.breakdown import (
    BOUND_LABELS,
    CATEGORIES,
    TimedStep,
    bottleneck,
    bottleneck_note,
    clip,
    device_ceiling,
    device_times,
    intersect,
    length,
    mean_shares,
    step_shares,
    subtract,
    union,
)
from mgbench.measure.trace_events import STEP_MARK, TraceWindow, interval_kind, torch_trace_window, xla_trace_window
from mgbench.records.breakdown_record import attach_breakdown, merge_breakdowns, rank_breakdown, write_rank_breakdown
from mgbench.records.results import RunResult

US = 1e-6
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


def event(name, ts, dur, cat, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": 7, "tid": 7, "ts": ts, "dur": dur, "args": args}


def kernel(ts, dur, device, name="void at::native::vectorized_elementwise_kernel<4>"):
    return event(name, ts, dur, "kernel", device=device, stream=7)


def copy(ts, dur, device, name="Memcpy HtoD (Pinned -> Device)"):
    return event(name, ts, dur, "gpu_memcpy", device=device, stream=20)


def steps(*spans):
    """Step marks as torch.profiler records them: on the CPU thread, and repeated on the GPU timeline."""
    marks = [event(STEP_MARK, start, end - start, "user_annotation") for start, end in spans]
    return marks + [event(STEP_MARK, start + 5, end - start, "gpu_user_annotation") for start, end in spans]


def gpu_trace():
    """Two steps of 1000 us on two GPUs of one process (microseconds).

    GPU 0: compute [50, 450] and [300, 600] overlap each other, [1100, 1500], a memset
    [1650, 1700] and [1950, 2050] running past the window; NCCL [500, 800] (600-800 exposed) and
    [1400, 1600] (1500-1600 exposed); input copies [0, 100] (0-50 exposed) and [1600, 1650];
    idle [800, 1100] and [1700, 1950]; the loss all-reduce at [2100, 2200] is after the steps.
    GPU 1: one long kernel [0, 1900] and NCCL [1800, 2000] (1900-2000 exposed): no idle time.
    """
    gpu0 = [
        kernel(50, 400, 0),
        kernel(300, 300, 0),
        kernel(1100, 400, 0),
        event("Memset (Device)", 1650, 50, "gpu_memset", device=0),
        kernel(1950, 100, 0),
        kernel(500, 300, 0, NCCL),
        kernel(1400, 200, 0, NCCL),
        kernel(2100, 100, 0, NCCL),
        copy(0, 100, 0),
        copy(1600, 50, 0),
    ]
    gpu1 = [kernel(0, 1900, 1, "sm90_xmma_gemm_bf16bf16_bf16f32"), kernel(1800, 200, 1, NCCL)]
    host = [event("cudaLaunchKernel", 10, 900, "cuda_runtime"), event("aten::mm", 0, 2000, "cpu_op")]
    return {"traceEvents": steps((0, 1000), (1000, 2000)) + gpu0 + gpu1 + host}


GPU0 = {"input_wait": 100, "host_to_device": 100, "compute": 1050, "communication": 300, "idle": 450}
GPU1 = {"input_wait": 100, "host_to_device": 0, "compute": 1900, "communication": 100, "idle": 0}
"""Microseconds per category with 100 us of input wait: on GPU 0 carved out of 550 us idle
(sum 2000 = the window); GPU 1 has no idle to carve from, so its sum is 2100 and scales down."""


def shares_of(seconds):
    total = sum(seconds.values())
    return {name: value / total for name, value in seconds.items()}


def test_gpu_layout_gives_each_devices_exact_shares():
    window = torch_trace_window(gpu_trace())
    assert window.clock == "device" and sorted(window.devices) == ["cuda:0", "cuda:1"]
    record = rank_breakdown(window, host_seconds=0.5, input_wait_seconds=100 * US, steps=2)
    assert record["window_source"] == "step marks"
    assert record["window_seconds"] == pytest.approx(2000 * US)
    assert record["step_spans"] == [(0, 1000 * US), (1000 * US, 2000 * US)]
    times = record["devices"]["cuda:0"]["seconds"]
    assert times == pytest.approx(
        {
            "window": 2000 * US,
            "compute": 1050 * US,
            "communication": 300 * US,
            "host_to_device": 100 * US,
            "idle": 550 * US,
        }
    )
    for name, expected in (("cuda:0", GPU0), ("cuda:1", GPU1)):
        shares = record["devices"][name]["shares"]
        assert shares == pytest.approx(shares_of(expected)) and record["devices"][name]["window_shares"] == shares
        assert sum(shares.values()) == pytest.approx(1)
    assert max(end for device in record["devices"].values() for _, end, _ in device["intervals"]) == pytest.approx(
        2000 * US
    )


def test_shares_of_the_timed_step_keep_the_devices_work_per_step_and_drop_the_profilers_extra_idle():
    """The profiled steps took 1000 us each; the timed step took 800 us, 50 of them input wait.
    GPU 0 worked 725 us per step (compute 525, exposed NCCL 150, exposed copies 50): 75 us idle,
    25 once the wait is carved out. GPU 1 worked 1000 us per step, more than the timed step: no
    idle, and its shares scale by their sum (1050 us)."""
    record = rank_breakdown(torch_trace_window(gpu_trace()), 0.5, 100 * US, steps=2, timed=TimedStep(800 * US, 50 * US))
    assert record["window_step_seconds"] == pytest.approx(1000 * US)
    assert record["timed_step"] == pytest.approx({"seconds": 800 * US, "input_wait": 50 * US})
    gpu0 = {"input_wait": 50, "host_to_device": 50, "compute": 525, "communication": 150, "idle": 25}
    gpu1 = {"input_wait": 50, "host_to_device": 0, "compute": 950, "communication": 50, "idle": 0}
    for name, expected, window in (("cuda:0", gpu0, GPU0), ("cuda:1", gpu1, GPU1)):
        assert record["devices"][name]["shares"] == pytest.approx(shares_of(expected))
        assert record["devices"][name]["window_shares"] == pytest.approx(shares_of(window))


def test_rank_files_merge_into_the_run_breakdown_and_the_row(tmp_path):
    trace = tmp_path / "rank0-trace.json"
    assert (
        write_rank_breakdown(tmp_path, 0, trace, torch_trace_window(gpu_trace()), "torch.profiler", 2, 0.5, 100 * US)
        is None
    )
    result = RunResult.flat(RunConfig.flat("pytorch", "dp", "tiny", 2, "cuda", 4, 8), "ok", median_step_seconds=0.01)
    result.timing.samples_per_sec = 750.0
    attach_breakdown(result, tmp_path)
    expected = {name: (shares_of(GPU0)[name] + shares_of(GPU1)[name]) / 2 for name in CATEGORIES}
    assert result.profiled.breakdown == pytest.approx(expected)
    assert result.profiled.bottleneck == "idle" and result.profiled.breakdown_clock == "device"
    assert result.profiled.bottleneck_note == bottleneck_note(expected)
    # The global batch of 8 over the compute share of the 10 ms timed step.
    assert result.profiled.device_ceiling_samples_per_sec == pytest.approx(8 / (expected["compute"] * 0.01))
    assert sum(result.profiled.ceiling_taken.values()) == pytest.approx(
        result.profiled.device_ceiling_samples_per_sec - 750.0
    )
    merged = json.loads((tmp_path / "breakdown.json").read_text())
    assert sorted(merged["devices"]) == ["rank0/cuda:0", "rank0/cuda:1"] and merged["ranks"] == ["rank0-breakdown.json"]
    # Every number can be recomputed from what the rank file keeps.
    kept = json.loads((tmp_path / "rank0-breakdown.json").read_text())
    for name, device in kept["devices"].items():
        times = device_times([tuple(i) for i in device["intervals"]], [tuple(s) for s in kept["step_spans"]])
        assert times.to_dict() == pytest.approx(device["seconds"])
        assert step_shares(times, kept["input_wait_seconds"]) == pytest.approx(
            merged["devices"][f"rank0/{name}"]["shares"]
        )


def test_a_window_that_cannot_be_split_leaves_the_row_without_breakdown_saying_why(tmp_path):
    trace = tmp_path / "rank0-trace.json"
    empty = TraceWindow("device", {"cuda:0": []})  # no steps marked, nothing ran, no host time
    assert "window is empty" in write_rank_breakdown(tmp_path, 0, trace, empty, "torch.profiler", 2, 0.0, 0.0)
    result = RunResult.flat(RunConfig.flat("pytorch", "ddp", "tiny", 2, "cuda", 4, 8), "ok", profile={"steps": 2})
    attach_breakdown(result, tmp_path)
    assert result.profiled.breakdown is None and result.profiled.bottleneck is None
    assert "rank 0: ValueError" in result.profiled.profile["breakdown_error"] and result.profiled.profile["steps"] == 2
    assert merge_breakdowns(tmp_path / "nothing-here") is None


def test_cpu_layout_splits_operators_and_gloo_collectives():
    """torch.profiler on CPU: nested operators on the main thread, gloo's all-reduce on its own
    thread; Python-level annotations (the optimizer step) are not operators."""
    ops = [
        event("aten::conv2d", 0, 300, "cpu_op"),
        event("aten::convolution", 10, 280, "cpu_op"),
        event("aten::addmm", 400, 300, "cpu_op"),
        event("c10d::allreduce_", 690, 5, "cpu_op"),
        event("gloo:all_reduce", 600, 300, "user_annotation"),
        event("Optimizer.step#SGD.step", 350, 600, "user_annotation"),
    ]
    window = torch_trace_window({"traceEvents": steps((0, 1000))[:1] + ops})
    assert window.clock == "cpu" and list(window.devices) == ["cpu"]
    record = rank_breakdown(window, host_seconds=0.5, input_wait_seconds=50 * US, steps=1)
    shares = record["devices"]["cpu"]["shares"]
    assert shares == pytest.approx(
        {"input_wait": 0.05, "host_to_device": 0.0, "compute": 0.6, "communication": 0.2, "idle": 0.15}
    )
    assert bottleneck(shares) == "communication"


def test_without_step_marks_the_window_is_the_host_clock_from_the_first_event():
    window = torch_trace_window({"traceEvents": [kernel(1000, 200, 0), kernel(1500, 100, 0)]})
    record = rank_breakdown(window, host_seconds=1000 * US, input_wait_seconds=0.0, steps=1)
    assert record["window_source"] == "host clock"
    assert record["devices"]["cuda:0"]["seconds"]["idle"] == pytest.approx(700 * US)


def test_a_cuda_only_trace_on_the_host_clock_gives_the_marked_traces_shares_of_the_timed_step():
    """torch.profiler on GPU records CUDA activity only: no step marks, no host operators. With
    synchronised steps all device work lies in the host-clocked window, so the shares of the
    timed step are those of a marked trace of the same work; only the window's own shares, whose
    length the two clocks measure differently, may differ."""
    device_events = [
        e for e in gpu_trace()["traceEvents"] if e["cat"] in ("kernel", "gpu_memcpy", "gpu_memset") and e["ts"] < 1900
    ]
    launches = [event("cudaLaunchKernel", e["ts"] - 5, 3, "cuda_runtime") for e in device_events]
    timed = TimedStep(800 * US, 50 * US)
    marked = rank_breakdown(
        torch_trace_window({"traceEvents": steps((0, 1000), (1000, 2000)) + device_events}), 0.5, 0.0, 2, timed
    )
    host_clocked = rank_breakdown(
        torch_trace_window({"traceEvents": device_events + launches}), 2100 * US, 0.0, 2, timed
    )
    assert host_clocked["window_source"] == "host clock" and host_clocked["step_spans"] == [(0, 2100 * US)]
    for name in ("cuda:0", "cuda:1"):
        assert host_clocked["devices"][name]["seconds"]["compute"] == pytest.approx(
            marked["devices"][name]["seconds"]["compute"]
        )
        assert host_clocked["devices"][name]["shares"] == pytest.approx(marked["devices"][name]["shares"])
    assert host_clocked["devices"]["cuda:0"]["seconds"]["idle"] > marked["devices"]["cuda:0"]["seconds"]["idle"]


def test_xla_gpu_trace_reads_stream_kernels_copies_and_the_host_step_marks():
    meta = [
        {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/host:CPU"}},
        {"ph": "M", "pid": 2, "name": "process_name", "args": {"name": "/device:GPU:0"}},
        {"ph": "M", "pid": 2, "tid": 7, "name": "thread_name", "args": {"name": "Stream #7(Compute)"}},
        {"ph": "M", "pid": 2, "tid": 90, "name": "thread_name", "args": {"name": "XLA Ops"}},
    ]
    timed = [
        {"ph": "X", "pid": 1, "tid": 3, "ts": 0, "dur": 1000, "name": STEP_MARK},
        {"ph": "X", "pid": 2, "tid": 7, "ts": 0, "dur": 100, "name": "MemcpyH2D"},
        {"ph": "X", "pid": 2, "tid": 7, "ts": 100, "dur": 600, "name": "loop_convolution_fusion"},
        {"ph": "X", "pid": 2, "tid": 7, "ts": 600, "dur": 200, "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"},
        {"ph": "X", "pid": 2, "tid": 90, "ts": 100, "dur": 900, "name": "fusion.3"},
    ]
    window = xla_trace_window({"traceEvents": meta + timed})
    assert window.clock == "device" and window.steps == [(0, 1000 * US)]
    assert [kind for _, _, kind in window.devices["/device:GPU:0"]] == ["host_to_device", "compute", "communication"]
    shares = rank_breakdown(window, 0.5, 0.0, steps=1)["devices"]["/device:GPU:0"]["shares"]
    assert shares == pytest.approx(
        {"input_wait": 0, "host_to_device": 0.1, "compute": 0.6, "communication": 0.1, "idle": 0.2}
    )


@pytest.mark.parametrize(
    "name, kind",
    [
        ("Memcpy HtoD (Pinned -> Device)", "host_to_device"),
        ("MemcpyH2D", "host_to_device"),
        ("Memcpy DtoD (Device -> Device)", "other_copy"),
        ("Memset (Device)", "other_copy"),
        ("MemcpyD2H", "other_copy"),
        ("ncclKernel_AllReduce_RING_LL_Sum_float", "communication"),
        ("all-reduce.1", "communication"),
        ("wrapped_broadcast.1", "compute"),
        ("sm90_xmma_fprop_implicit_gemm", "compute"),
        ("depth2d_fusion", "compute"),
    ],
)
def test_event_names_classify_into_interval_kinds(name, kind):
    assert interval_kind(name) == kind


@pytest.mark.parametrize(
    "shares, expected, note",
    [
        # pytorch ddp ResNet-50 on one H200: 88% compute, 6% idle: compute-bound, idle named.
        ({"compute": 0.889, "idle": 0.063, "input_wait": 0.003, "host_to_device": 0.045}, "compute", "idle 6% next"),
        ({"compute": 0.93, "idle": 0.01, "communication": 0.06}, "compute", "communication 6% next"),
        ({"compute": 0.97, "idle": 0.01, "communication": 0.02}, "compute", "communication 2% next"),
        ({"compute": 0.99, "idle": 0.01}, "compute", None),
        # A material share outweighs a large compute share: DenseNet-121 ddp, 83% compute, 14% idle.
        ({"compute": 0.831, "idle": 0.141, "host_to_device": 0.028}, "idle", "host_to_device 3% next"),
        # Host-bound: eager Keras over PyTorch on DenseNet-121.
        ({"compute": 0.515, "idle": 0.48, "input_wait": 0.005}, "idle", None),
        # Input-bound: the host waits for batches most of the step.
        ({"compute": 0.3, "input_wait": 0.55, "idle": 0.1, "host_to_device": 0.05}, "input_wait", "idle 10% next"),
        ({"compute": 0.5, "input_wait": 0.2, "communication": 0.3}, "communication", "input_wait 20% next"),
    ],
)
def test_bottleneck_rule_labels_each_fixture_breakdown(shares, expected, note):
    full = {**dict.fromkeys(CATEGORIES, 0.0), **shares}
    assert sum(full.values()) == pytest.approx(1.0)
    assert bottleneck(full) == expected
    assert bottleneck_note(full) == note


def test_the_bound_labels_name_every_category():
    assert set(BOUND_LABELS) == set(CATEGORIES)
    assert (BOUND_LABELS["compute"], BOUND_LABELS["idle"], BOUND_LABELS["input_wait"]) == (
        "compute-bound",
        "host-bound",
        "input-bound",
    )


def test_device_ceiling_is_the_batch_over_compute_and_the_other_shares_take_their_part_of_it():
    shares = {"input_wait": 0.05, "host_to_device": 0.05, "compute": 0.6, "communication": 0.1, "idle": 0.2}
    # 512 images a median step of 0.5 s (1024 img/s), 0.3 s of it compute: the device alone
    # would reach 512 / 0.3; the steady window ran at 1000 img/s, 24 under the median step's.
    ceiling = device_ceiling(512, 0.5, 1000.0, shares)
    assert ceiling.samples_per_sec == pytest.approx(512 / 0.3)
    expected = {"host": 0.2, "input": 0.1, "communication": 0.1}
    assert ceiling.taken == pytest.approx(
        {**{part: 512 / 0.3 * share for part, share in expected.items()}, "uneven_steps": 24.0}
    )
    assert sum(ceiling.taken.values()) == pytest.approx(ceiling.samples_per_sec - 1000.0)
    assert device_ceiling(512, 0.5, 1000.0, {**shares, "compute": 0.0}) is None


def test_run_breakdown_is_the_mean_over_devices():
    first = dict(zip(CATEGORIES, (0.1, 0.0, 0.5, 0.2, 0.2), strict=True))
    second = dict(zip(CATEGORIES, (0.1, 0.2, 0.7, 0.0, 0.0), strict=True))
    assert mean_shares([first, second]) == pytest.approx(dict(zip(CATEGORIES, (0.1, 0.1, 0.6, 0.1, 0.1), strict=True)))


def test_span_arithmetic_matches_counting_unit_cells():
    """union, intersect and subtract against sets of integer cells, on random spans."""
    rng = random.Random(3)

    def spans(count):
        return [(start, start + rng.randint(1, 15)) for start in (rng.randint(0, 80) for _ in range(count))]

    def cells(items):
        return {cell for start, end in items for cell in range(start, end)}

    for _ in range(200):
        a, b = union(spans(rng.randint(0, 8))), union(spans(rng.randint(0, 8)))
        assert length(a) == len(cells(a)) and all(x[1] < y[0] for x, y in pairwise(a))
        assert cells(intersect(a, b)) == cells(a) & cells(b) and length(intersect(a, b)) == len(cells(a) & cells(b))
        assert cells(subtract(a, b)) == cells(a) - cells(b) and length(subtract(a, b)) == len(cells(a) - cells(b))


def test_clip_keeps_each_intervals_cells_inside_the_window_and_its_kind():
    """clip against integer cells: intervals inside one step, across steps, outside, empty."""
    rng = random.Random(5)
    for _ in range(200):
        window = [
            (start, start + rng.randint(1, 12)) for start in (rng.randint(0, 60) for _ in range(rng.randint(1, 5)))
        ]
        intervals = [
            (start, start + rng.randint(0, 20), rng.choice(("compute", "communication")))
            for start in (rng.randint(0, 70) for _ in range(rng.randint(0, 10)))
        ]
        inside = clip(intervals, window)
        covered = {cell for start, end in union(window) for cell in range(start, end)}
        for kind in ("compute", "communication"):
            kept = [(start, end) for start, end, k in inside if k == kind]
            given = [(start, end) for start, end, k in intervals if k == kind]
            assert all(start < end for start, end in kept)
            assert sorted(cell for start, end in kept for cell in range(start, end)) == sorted(
                cell for start, end in given for cell in range(start, end) if cell in covered
            )
