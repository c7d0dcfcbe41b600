"""Result rows: JSON round trip, pandas reads the file directly, scaling figures are derived right."""

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import append_result, mgbench

from mgbench.core.config import RunConfig
from mgbench.records.finished import write_results
from mgbench.records.results import RunResult, read_results
from mgbench.reports.summary import results_frame, write_summary


def row(strategy, devices, samples_per_sec, status="ok"):
    config = RunConfig.flat("pytorch", strategy, "resnet50", devices, "cuda", 32, 10)
    if status != "ok":
        return RunResult.flat(config, status, error="boom\nsecond line")
    return RunResult.flat(
        config,
        "ok",
        samples_per_sec=samples_per_sec,
        samples_per_sec_p10=samples_per_sec * 0.9,
        samples_per_sec_p90=samples_per_sec * 1.1,
        warmup_steps=2,
        warmup_seconds=1.0,
        input_wait_fraction=0.1,
        startup_seconds=3.0,
        peak_memory_bytes=2**30,
        step_seconds=[0.1, 0.1],
    )


def test_round_trip_and_pandas(tmp_path):
    path = tmp_path / "results.jsonl"
    rows = [row("ddp", 1, 100.0), row("ddp", 2, 190.0), row("dp", 2, 0, status="oom")]
    for r in rows:
        append_result(path, r)
    assert [r.to_record() for r in read_results(path)] == [r.to_record() for r in rows]
    frame = pd.read_json(path, lines=True)
    assert list(frame["devices"]) == [1, 2, 2]
    assert list(frame["status"]) == ["ok", "ok", "oom"]
    assert frame.loc[1, "samples_per_sec"] == 190.0
    assert all(json.loads(line)["run_id"] for line in path.read_text().splitlines())


def test_speedup_and_efficiency_per_strategy(tmp_path):
    results = [
        row("ddp", 1, 100.0),
        row("ddp", 4, 360.0),
        row("dp", 1, 80.0),
        row("dp", 4, 120.0),
        row("dp-loss", 4, 0, "failed"),
    ]
    frame = results_frame(results)
    ddp4 = frame[(frame.strategy == "ddp") & (frame.devices == 4)].iloc[0]
    dp4 = frame[(frame.strategy == "dp") & (frame.devices == 4)].iloc[0]
    assert ddp4.speedup == pytest.approx(3.6) and ddp4.scaling_efficiency_fraction == pytest.approx(0.9)
    assert dp4.speedup == pytest.approx(1.5) and dp4.scaling_efficiency_fraction == pytest.approx(0.375)
    assert np.isnan(frame[frame.strategy == "dp-loss"].iloc[0].speedup)
    write_summary(tmp_path, results)
    summary = pd.read_csv(tmp_path / "summary.csv")
    assert len(summary) == 5
    markdown = (tmp_path / "summary.md").read_text()
    assert "3.60x" in markdown and "90%" in markdown and "failed: boom" in markdown


def test_the_results_writer_sets_each_row_against_the_smallest_count_of_its_framework_strategy_and_job(tmp_path):
    """`write_results`, the file's one writer: each run's row from its rounds, with its speed-up,
    efficiency and rate per device over the smallest count of its framework, strategy and job (a
    batch halved over 4 devices is the same job, another model is not), none for a failed run;
    pandas reads them as columns, and the rows read back are the rows written."""
    path = tmp_path / "results.jsonl"
    one = RunConfig.flat("pytorch", "ddp", "tiny", 1, "cpu", 8, 5)
    runs = [
        [RunResult.flat(one, "ok", samples_per_sec=100.0)],
        [RunResult.flat(one.with_changes(devices=4, batch_per_device=2), "ok", samples_per_sec=300.0)],
        [RunResult.flat(one.with_changes(model="resnet50", devices=2), "ok", samples_per_sec=40.0)],
        [RunResult.flat(one.with_changes(strategy="dp", devices=4), "failed", error="boom")],
    ]
    rows = write_results(path, runs)
    frame = pd.read_json(path, lines=True)
    assert list(frame.speedup[:3]) == pytest.approx([1.0, 3.0, 1.0])
    assert list(frame.scaling_efficiency_fraction[:3]) == pytest.approx([1.0, 0.75, 1.0])
    assert list(frame.samples_per_sec_per_device[:3]) == pytest.approx([100.0, 75.0, 20.0])
    assert frame[["speedup", "scaling_efficiency_fraction"]].iloc[3].isna().all() and frame.error[3] == "boom"
    assert list(frame.rounds[:3]) == [1, 1, 1]
    assert [row.to_record() for row in read_results(path)] == [row.to_record() for row in rows]


def test_a_row_written_before_a_field_was_renamed_reads_under_the_new_name(tmp_path):
    """Fractions are named `*_fraction`: old folders' `peak_share` and
    `allreduce_step_share` read as `peak_fraction` and `allreduce_step_fraction`, with no stale column."""
    from mgbench.reports.folder_data import load_run_folder

    record = {**row("ddp", 1, 100.0).to_record(), "peak_share": 0.17, "allreduce_step_share": 0.05}
    del record["peak_fraction"], record["allreduce_step_fraction"]
    (tmp_path / "results.jsonl").write_text(json.dumps(record) + "\n")
    result = read_results(tmp_path / "results.jsonl")[0]
    assert result.limit.peak_fraction == 0.17 and result.limit.allreduce_step_fraction == 0.05
    frame = load_run_folder(tmp_path).frame
    assert frame.loc[0, "peak_fraction"] == 0.17 and "peak_share" not in frame and "allreduce_step_share" not in frame
    write_summary(tmp_path, [result])
    assert pd.read_csv(tmp_path / "summary.csv").loc[0, "peak_fraction"] == 0.17


CHEXNET_4GPU = Path(__file__).parent / "fixtures" / "run-folder-chexnet-4gpu"
"""A real run folder written when the rate was `images_per_sec` (and the work `flops_per_image`)."""


def test_a_row_written_when_the_rate_was_images_per_sec_reads_as_samples_per_sec(tmp_path):
    """Every figure of the rate an earlier version named by images reads under its sample name,
    with its value; no column of the old name is left; `report` and `diff` read such a folder, and
    a diff of it against its rows written again under the new names finds nothing changed."""
    from mgbench.reports.folder_data import load_run_folder

    first = json.loads((CHEXNET_4GPU / "results.jsonl").read_text().splitlines()[0])
    result = RunResult.from_record(first)
    assert result.timing.samples_per_sec == first["images_per_sec"] > 0
    for end in ("low", "high", "p10", "p90"):
        assert getattr(result.timing, f"samples_per_sec_{end}") == first[f"images_per_sec_{end}"]
    assert result.repeats.round_samples_per_sec == first["round_images_per_sec"]
    assert result.by_epoch.epoch_samples_per_sec == first["epoch_images_per_sec"]
    assert result.scaling.samples_per_sec_per_device == first["images_per_sec_per_device"]
    assert result.limit.flops_per_sample == first["flops_per_image"]
    assert result.by_epoch.epoch_metrics[0]["samples_per_sec"] == first["epoch_metrics"][0]["images_per_sec"]
    frame = load_run_folder(CHEXNET_4GPU).frame
    assert not [column for column in frame if "images_per_sec" in column or "per_image" in column]
    assert frame["samples_per_sec"].tolist() == [
        json.loads(line)["images_per_sec"] for line in (CHEXNET_4GPU / "results.jsonl").read_text().splitlines()
    ]

    old, written_again = tmp_path / "old", tmp_path / "new"
    shutil.copytree(CHEXNET_4GPU, old)
    report = mgbench("report", str(old), "--format", "csv")
    assert report.returncode == 0, report.stderr
    assert "samples_per_sec_4dev" in report.stdout.splitlines()[0] and (old / "report.html").is_file()
    shutil.copytree(CHEXNET_4GPU, written_again)
    rows = read_results(CHEXNET_4GPU / "results.jsonl")
    (written_again / "results.jsonl").write_text("".join(row.to_json() + "\n" for row in rows))
    assert "images_per_sec" not in (written_again / "results.jsonl").read_text()
    diff = mgbench("diff", str(old), str(written_again))
    assert diff.returncode == 0, diff.stderr
    assert (
        diff.stdout.strip().splitlines()[-1]
        == f"No run of NEW is slower than in OLD beyond the spread ({len(rows)} compared)."
    )
    assert "+0.0%" in diff.stdout and "OLD img/s" in diff.stdout
