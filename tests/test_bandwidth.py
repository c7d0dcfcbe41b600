"""Bandwidth: the ring all-reduce model, its figure in result rows, and a real gloo measurement on CPU."""

import io
import json

import pandas as pd
import pytest
from conftest import mgbench, tiny_job
from rich.console import Console

from mgbench.core.config import RunConfig
from mgbench.core.errors import UsageError
from mgbench.frameworks.pytorch.spec import DDP_COMMUNICATION
from mgbench.records.bandwidth import BandwidthReport, annotate_allreduce, expected_communication_seconds, parse_sizes
from mgbench.records.peak import MEASURED
from mgbench.records.results import RunResult


def test_ring_formula():
    # 25.6 M fp32 gradients (ResNet-50) over 8 GPUs at 100 GB/s bus bandwidth: 2*7/8 * 102.4 MB / 100 GB/s.
    assert expected_communication_seconds(DDP_COMMUNICATION, 25_600_000, 4, 100e9, 8) == pytest.approx(1.792e-3)
    assert expected_communication_seconds(DDP_COMMUNICATION, 1000, 4, 1e9, 2) == pytest.approx(
        4e-6
    )  # 2*(1/2) * 4000 B / 1 GB/s
    assert (
        expected_communication_seconds(DDP_COMMUNICATION, 1000, 4, 1e9, 1) == 0.0
    )  # nothing to exchange on one device
    with pytest.raises(ValueError):
        expected_communication_seconds(DDP_COMMUNICATION, 1000, 4, 0.0, 2)


def test_sizes_parse():
    assert parse_sizes("64K,1K,1M,1024") == [1024, 65536, 2**20]
    with pytest.raises(UsageError):
        parse_sizes("2")


def test_rows_get_the_expected_allreduce_share():
    report = BandwidthReport(
        "cuda",
        4,
        "nccl",
        allreduce=[
            {"bytes": 2**20, "seconds": 1e-4, "algbw_gbps": 10.0, "busbw_gbps": 15.0},
            {"bytes": 2**26, "seconds": 1e-3, "algbw_gbps": 60.0, "busbw_gbps": 90.0},
        ],
    )
    config = RunConfig.flat("pytorch", "ddp", "resnet50", 4, "cuda", 32, 10)
    row = RunResult.flat(config, "ok", parameters=25_557_032, median_step_seconds=0.25)
    annotate_allreduce(row, report, DDP_COMMUNICATION)
    # 102 MB of gradients: the 64 MiB measurement (the largest not above it) applies.
    expected = 2 * 3 / 4 * 25_557_032 * 4 / 90e9
    assert row.limit.expected_allreduce_seconds == pytest.approx(expected)
    assert row.limit.allreduce_step_fraction == pytest.approx(expected / 0.25)
    small = RunResult.flat(config, "ok", parameters=5_418, median_step_seconds=0.01)
    annotate_allreduce(small, report, DDP_COMMUNICATION)  # 21 kB: below every size, the smallest measured applies
    assert small.limit.expected_allreduce_seconds == pytest.approx(2 * 3 / 4 * 5_418 * 4 / 15e9)
    single = RunResult.flat(config.with_changes(devices=1), "ok", parameters=5_418, median_step_seconds=0.01)
    annotate_allreduce(single, report, DDP_COMMUNICATION)
    assert single.limit.expected_allreduce_seconds is None


def test_the_printed_matmul_peak_has_the_vendors_beside_it():
    """`mgbench bandwidth` prints each measured peak with the datasheet's figure where the device has one."""
    from mgbench.cli.bandwidth import print_report

    def printed(names: list[str]) -> str:
        report = BandwidthReport(
            "cuda", 1, "nccl", device_names=names, matmul_tflops={"bf16": 790.0, "fp32": 50.25}, matmul_size=8192
        )
        buffer = io.StringIO()
        print_report(report, Console(file=buffer, width=300, color_system=None))
        return next(line for line in buffer.getvalue().splitlines() if line.startswith("dense matmul"))

    assert printed(["NVIDIA H200"]) == (
        "dense matmul (8192x8192) TFLOP/s per device: bf16 790.00 (vendor: NVIDIA H200 SXM 989.5, 80% of it), "
        "fp32 50.25 (vendor: NVIDIA H200 SXM 67, 75% of it)"
    )
    assert printed(["Some Future GPU"]).endswith("TFLOP/s per device: bf16 790.00, fp32 50.25")


def test_cpu_gloo_measurement_gives_positive_figures_at_the_sizes_asked(tmp_path):
    pytest.importorskip("torch", reason="PyTorch is not installed")
    done = mgbench(
        "bandwidth",
        "--device",
        "cpu",
        "--gpus",
        "2",
        "--sizes",
        "4K,256K",
        "--copy-bytes",
        "1M",
        "--out",
        str(tmp_path),
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = BandwidthReport.read(tmp_path / "bandwidth.json")
    assert report.backend == "gloo" and report.devices == 2 and report.device_kind == "cpu"
    assert [entry["bytes"] for entry in report.allreduce] == [4096, 262144]
    for entry in report.allreduce:
        assert entry["seconds"] > 0 and entry["algbw_gbps"] > 0
        assert entry["busbw_gbps"] == pytest.approx(entry["algbw_gbps"] * 2 * (2 - 1) / 2)
        assert entry["algbw_gbps"] == pytest.approx(entry["bytes"] / entry["seconds"] / 1e9)
    assert report.host_memcpy_gbps > 0 and report.copy_bytes == 2**20
    assert report.host_to_device_gbps == {} and report.device_to_device_gbps == []
    assert set(report.matmul_tflops) == {"bf16", "fp32"} and report.matmul_size == 1024
    assert all(tflops > 0 for tflops in report.matmul_tflops.values())


def test_compare_reuses_bandwidth_json_in_the_run_folder(tmp_path):
    out = tmp_path / "bw"
    out.mkdir()
    report = BandwidthReport(
        "cpu",
        2,
        "gloo",
        allreduce=[{"bytes": 1024, "seconds": 1e-3, "algbw_gbps": 1e-3, "busbw_gbps": 1e-3}],
        matmul_tflops={"fp32": 0.05, "bf16": 0.2},
        matmul_size=1024,
    )
    report.write(out / "bandwidth.json")
    done = mgbench(
        "compare",
        "--frameworks",
        "fake",
        "--strategies",
        "steady",
        "--gpus",
        "2",
        *tiny_job(6),
        "--bandwidth",
        "--out",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    rows = pd.read_json(out / "results.jsonl", lines=True).set_index("devices")
    # the fake model has 1234 parameters: 2*(1/2) * 4936 B / 1 MB/s
    assert rows.loc[2, "expected_allreduce_seconds"] == pytest.approx(4936 / 1e6)
    assert rows.loc[2, "allreduce_step_fraction"] == pytest.approx(4936 / 1e6 / rows.loc[2, "median_step_seconds"])
    assert pd.isna(rows.loc[1, "expected_allreduce_seconds"])
    assert json.loads((out / "bandwidth.json").read_text()) == report.to_dict()  # reused, not remeasured
    # The fp32 rows' share of the peak is taken against the measured fp32 matmul of this kind of device.
    assert (rows["peak_tflops"] == 0.05).all() and (rows["peak_source"] == MEASURED).all()
    assert rows["peak_fraction"].to_numpy() == pytest.approx((rows["achieved_tflops"] / (0.05 * rows.index)).to_numpy())
