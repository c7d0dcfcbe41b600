"""benchmarks/decode_table.py: each real-data row's share of its synthetic twin, of its img/s and of
its median step after the first `SETTLED` steps (which a --decode gpu run's slow first steps
do not reach)."""

import json
from pathlib import Path

import pytest
from conftest import benchmark_script


@pytest.fixture(scope="module")
def table():
    return benchmark_script("decode_table")


def folder(root: Path, name: str, rows: list[dict]) -> str:
    path = root / name
    path.mkdir()
    (path / "results.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


def row(dataset: str, decode: str, rate: float, steps: list[float], **job) -> dict:
    base = {"framework": "pytorch", "strategy": "ddp", "compile": None, "status": "ok", "global_batch": 128}
    return {**base, **job, "dataset": dataset, "decode": decode, "samples_per_sec": rate, "step_seconds": steps}


def test_shares_of_the_synthetic_twin_by_rate_and_by_the_settled_median(table, tmp_path):
    settled = table.SETTLED
    slow_start = [0.05] * settled + [0.04] * (settled // 2)  # most steps slow: the median of all is slow
    folders = [
        folder(tmp_path, "dec-torch-synthetic", [row("synthetic", None, 3200.0, [0.032] * (settled + settled // 2))]),
        folder(tmp_path, "dec-torch-gpu", [row("imagefolder:/j", "gpu", 2880.0, slow_start)]),
        # another compile mode has no synthetic twin: left out
        folder(tmp_path, "dec-ro-gpu", [row("imagefolder:/j", "gpu", 4000.0, slow_start, compile="reduce-overhead")]),
    ]
    shares = table.shares(table.rows(folders))
    assert len(shares) == 1
    only = shares.iloc[0]
    assert only["decode"] == "gpu"
    assert only["share_of_synthetic"] == pytest.approx(0.9)
    assert only["settled_share"] == pytest.approx(0.032 / 0.04)


def test_rows_run_in_rounds_count_as_their_median_and_host_shares_stay_apart(table, tmp_path):
    """Three rounds of a synthetic row and of two --decode gpu rows, one with half of each batch
    decoded by the workers: each share is the median round's rate over the median synthetic one."""
    steps = [0.04] * (table.SETTLED + 10)
    folders = []
    for n, (synthetic, whole, split) in enumerate(
        [(4000.0, 3000.0, 3900.0), (3000.0, 2900.0, 3600.0), (3800.0, 3100.0, 2000.0)]
    ):
        folders.append(folder(tmp_path, f"r{n}-synthetic", [row("synthetic", None, synthetic, steps)]))
        folders.append(folder(tmp_path, f"r{n}-gpu", [row("imagefolder:/j", "gpu", whole, steps)]))
        folders.append(
            folder(tmp_path, f"r{n}-gpu-0.5", [row("imagefolder:/j", "gpu", split, steps, decode_host_share=0.5)])
        )
    shares = table.shares(table.rows(folders)).set_index("decode_host_share")
    assert shares["rounds"].tolist() == [3, 3]
    assert shares.loc[0.0, "share_of_synthetic"] == pytest.approx(3000.0 / 3800.0)
    assert shares.loc[0.5, "share_of_synthetic"] == pytest.approx(3600.0 / 3800.0)
    assert shares.loc[0.5, "settled_share"] == pytest.approx(1.0)
