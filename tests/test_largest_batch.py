"""The largest batch per GPU a row models from its peak memory (`records.largest_batch`): the line
through its peak with the activation estimate's slope, or fitted to peaks at two batches; within
what ran and below what ran out of memory; none on CPU devices."""

from mgbench.core.config import RunConfig
from mgbench.records.figures import OomRetries
from mgbench.records.finished import finished_rows
from mgbench.records.largest_batch import fitted_line
from mgbench.records.results import RunResult

GIB, MIB = 2**30, 2**20


def gpu_row(batch, peak, activations=None, memory_gib=80, device_kind="cuda", cap=None, strategy="fsdp"):
    job = {"gpu_memory_gb": cap} if cap is not None else {}
    config = RunConfig.flat("pytorch", strategy, "gpt2", 2, device_kind, batch, 10, **job)
    return RunResult.flat(
        config,
        "ok",
        samples_per_sec=100.0,
        peak_memory_bytes=peak,
        activation_bytes_estimate=activations,
        environment={"gpus": [{"name": "NVIDIA H100", "memory_total_mib": memory_gib * 1024}] * 2},
    )


def test_the_line_through_the_peak_with_the_activation_estimate_per_sample():
    # 10 GiB at 16, of which 4 GiB activations: 6 GiB fixed, 256 MiB a sample; (80 - 6) GiB / 256 MiB = 296.
    (row,) = finished_rows([[gpu_row(16, 10 * GIB, 4 * GIB)]])
    assert row.limit.largest_batch_estimate == 296
    assert "peak allocated at 16 per GPU (10.00 GiB)" in row.limit.largest_batch_basis
    assert "256.0 MiB a sample" in row.limit.largest_batch_basis
    assert row.limit.largest_batch_basis.endswith("in 80.0 GiB")


def test_gpu_memory_gb_caps_the_capacity_and_the_smallest_gpu_counts():
    (capped,) = finished_rows([[gpu_row(16, 10 * GIB, 4 * GIB, cap=20)]])
    assert capped.limit.largest_batch_estimate == (20 - 6) * 4  # 14 GiB at 256 MiB a sample
    row = gpu_row(16, 10 * GIB, 4 * GIB)
    row.origin.environment["gpus"] = [{"memory_total_mib": 80 * 1024}, {"memory_total_mib": 40 * 1024}]
    (smallest,) = finished_rows([[row]])
    assert smallest.limit.largest_batch_estimate == (40 - 6) * 4


def test_rounds_at_two_batches_fit_the_line_instead_of_the_estimate():
    # Peaks 6 + 0.5 b GiB at 8 and 16 (the estimate's slope, 0.25 GiB, would say otherwise):
    # (80 - 6) / 0.5 = 148.
    rounds = [gpu_row(16, 14 * GIB, 4 * GIB), gpu_row(8, 10 * GIB, 2 * GIB), gpu_row(16, 14 * GIB, 4 * GIB)]
    (row,) = finished_rows([rounds])
    assert row.limit.largest_batch_estimate == 148
    assert "fitted to the peaks allocated at 8 and 16 per GPU (512.0 MiB a sample)" in row.limit.largest_batch_basis


def test_the_fit_is_least_squares_over_each_batch_mean():
    line = fitted_line([(1, 3 * GIB), (2, 5 * GIB), (4, 9 * GIB), (4, 9 * GIB)])
    assert line is not None and line.per_sample == 2 * GIB and line.fixed == 1 * GIB
    assert line.largest_batch(11 * GIB) == 5
    assert fitted_line([(4, GIB), (4, 2 * GIB)]) is None


def test_never_below_the_batch_that_ran_nor_at_one_that_ran_out_of_memory():
    # Capped to 20 GiB by a framework without a cap: 21 GiB at 16, the line says 12 fit.
    (raised,) = finished_rows([[gpu_row(16, 21 * GIB, 4 * GIB, cap=20)]])
    assert raised.limit.largest_batch_estimate == 16 and "raised to 16, which ran" in raised.limit.largest_batch_basis
    halved = gpu_row(16, 10 * GIB, 4 * GIB)
    halved.retries = OomRetries(requested_batch_per_device=64, oom_retries=2)
    (row,) = finished_rows([[halved]])
    assert row.limit.largest_batch_estimate == 31
    assert row.limit.largest_batch_basis.endswith("below 32, which ran out of memory")


def test_no_estimate_on_cpu_devices_or_without_peak_estimate_or_memory():
    rows = finished_rows(
        [
            [gpu_row(16, 10 * GIB, 4 * GIB, device_kind="cpu", strategy="a")],
            [gpu_row(16, None, 4 * GIB, strategy="b")],
            [gpu_row(16, 10 * GIB, None, strategy="c")],
        ]
    )
    unknown = gpu_row(16, 10 * GIB, 4 * GIB, strategy="d")
    unknown.origin.environment = {}
    rows += finished_rows([[unknown]])
    assert [row.limit.largest_batch_estimate for row in rows] == [None] * 4
    assert [row.limit.largest_batch_basis for row in rows] == [None] * 4


def test_the_row_written_holds_the_figures_and_the_rounds_stay_as_they_were():
    first = gpu_row(16, 10 * GIB, 4 * GIB)
    (row,) = finished_rows([[first]])
    record = row.to_record()
    assert record["largest_batch_estimate"] == 296 and record["peak_memory_reserved_bytes"] is None
    assert first.limit.largest_batch_estimate is None
