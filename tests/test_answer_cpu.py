"""The answer of a real compare on CPU devices, end to end: rounds give every row its per-round
figures and spread, two strategies that train alike tie, and an epochs run too small to mean
anything ends on a verdict that says so, every ok row naming its bottleneck."""

from __future__ import annotations

import json

import pytest
from conftest import mgbench, read_rows, tiny_job

from mgbench.datasets.sample import make_sample


@pytest.mark.slow
def test_three_rounds_of_two_strategies_that_train_alike_give_spreads_and_a_tie(tmp_path):
    """pytorch `ddp` and `ddp-unstaged` differ only in staging input on a GPU's side stream: on
    CPU devices they run the same steps, so however the shared cores jitter, they tie."""
    out = tmp_path / "tie"
    done = mgbench(
        "compare",
        "--frameworks",
        "pytorch",
        "--strategies",
        "ddp,ddp-unstaged",
        "--gpus",
        "1",
        *tiny_job(15, batch=4, image_size=32, device="cpu"),
        "--repeat",
        "3",
        "--out",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    rows = read_rows(out)
    for _, row in rows.iterrows():
        assert row["rounds"] == 3 and len(row["round_samples_per_sec"]) == 3
        assert row["samples_per_sec_low"] <= min(row["round_samples_per_sec"]) <= row["samples_per_sec"]
        assert row["samples_per_sec"] <= max(row["round_samples_per_sec"]) <= row["samples_per_sec_high"]
    assert len((out / "rounds.jsonl").read_text().splitlines()) == 6
    words = " ".join(done.stdout.split())
    tie = "tie within noise for fastest on 1 CPU device"
    assert (
        f"pytorch ddp and pytorch ddp-unstaged {tie}" in words or f"pytorch ddp-unstaged and pytorch ddp {tie}" in words
    )
    assert "is fastest" not in words and "│ tie │" in words


@pytest.mark.slow
def test_an_epochs_run_of_64_images_ends_on_a_verdict_that_says_it_means_little(tmp_path):
    sample = tmp_path / "xray"
    make_sample(sample, 64, 32, seed=0)
    out = tmp_path / "epochs"
    done = mgbench(
        "compare",
        "--frameworks",
        "pytorch",
        "--gpus",
        "1",
        *tiny_job(1, batch=4, image_size=32, device="cpu"),
        "--dataset",
        f"chestxray:{sample}",
        "--epochs",
        "1",
        "--workers",
        "1",
        "--out",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    words = " ".join(done.stdout.split())
    assert "Its timing means little" in words and "train more images or more epochs" in words
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    for row in rows:
        assert row["status"] == "ok" and row["bottleneck"] in {"input_wait", "step", "synchronize", "loss_read"}
        assert row["breakdown_clock"] == "host" and row["epoch_samples_per_sec"] > 0
        assert row["warmup_seconds"] + row["stall_seconds"] + row["window_seconds"] == pytest.approx(
            row["train_seconds"]
        )
