"""benchmarks/same_job_table.py: each row's start, AUCs and time to train, with its speed-up
over the same framework's 1-GPU time to train."""

import json
from pathlib import Path

import pytest
from conftest import benchmark_script


@pytest.fixture(scope="module")
def table():
    return benchmark_script("same_job_table")


def row(framework: str, devices: int, seconds: float, status: str = "ok") -> dict:
    epochs = [
        {"epoch": 1, "val_auc": 0.65, "elapsed_seconds": seconds / 2},
        {"epoch": 2, "val_auc": 0.72, "elapsed_seconds": seconds},
    ]
    return {
        "framework": framework, "devices": devices, "status": status, "error": "out of memory" if status != "ok" else None,
        "epoch_metrics": epochs, "test_metrics": {"auc": 0.7}, "time_to_train_seconds": seconds,
        "startup_seconds": 2.0, "init": "same", "init_digest": "f33f4733aa64", "step_losses": [0.7155],
    }  # fmt: skip


def test_a_row_on_several_gpus_shows_its_speed_up_over_its_framework_on_one(table, tmp_path: Path):
    rows = [row("pytorch", 1, 60.0), row("pytorch", 4, 24.0), row("horovod", 4, 30.0), row("chainer", 1, 0.0, "failed")]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    lines = table.lines(tmp_path, 0.70)
    by_row = {tuple(line.split()[:2]): line for line in lines[2:] if not line.startswith("test AUC")}
    assert " 2.50x " in by_row[("pytorch", "4")]
    assert "60.0 (+2.0) at epoch 2" in by_row[("pytorch", "1")]
    assert by_row[("pytorch", "1")].split()[9] == "-"  # no speed-up over itself
    assert by_row[("horovod", "4")].split()[9] == "-"  # no 1-GPU row of its own to compare with
    assert "failed" in by_row[("chainer", "failed:")]
