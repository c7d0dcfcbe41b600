"""benchmarks/realdata_table.py: the real-against-synthetic shares BENCHMARKS.md quotes, by the
median over rounds and round by round."""

import json
from pathlib import Path

import pytest
from conftest import benchmark_script

KEY = {"framework": "pytorch", "strategy": "ddp", "model": "densenet121", "compile": None, "devices": 1}


@pytest.fixture(scope="module")
def table():
    return benchmark_script("realdata_table")


def folder(root: Path, name: str, dataset: str, rate: float, workers: int | None) -> str:
    path = root / name
    path.mkdir()
    row = {**KEY, "dataset": dataset, "status": "ok", "samples_per_sec": rate, "input_wait_fraction": 0.01}
    row |= {"loader": "torch.utils.data.DataLoader" if workers else None, "loader_workers": workers}
    (path / "results.jsonl").write_text(json.dumps(row) + "\n")
    return str(path)


def test_each_round_is_paired_with_its_own_synthetic_run(table, tmp_path):
    folders = [
        folder(tmp_path, "rd-dw-synthetic-r1", "synthetic", 1000.0, None),
        folder(tmp_path, "rd-dw-chestxray-r1", "chestxray:/data", 900.0, 15),
        folder(tmp_path, "rd-dw-chestxray-w4-r1", "chestxray:/data", 800.0, 4),
        folder(tmp_path, "rd-dw-synthetic-r2", "synthetic", 2000.0, None),
        folder(tmp_path, "rd-dw-chestxray-r2", "chestxray:/data", 2100.0, 15),
        folder(tmp_path, "rd-dw-chestxray-w4-r2", "chestxray:/data", 1900.0, 4),
    ]
    frame = table.rows(folders)
    key = tuple(frame.loc[0, column] for column in table.KEY)
    assert table.round_shares(frame, key, "chestxray", 15) == pytest.approx([0.9, 1.05])
    assert table.round_shares(frame, key, "chestxray", 4) == pytest.approx([0.8, 0.95])
    medians = table.medians(frame).set_index(["dataset", "loader_workers"])["median"]
    assert medians.xs("synthetic").iloc[0] == 1500.0
    assert medians[("chestxray", 15.0)] == 1500.0


def test_a_round_without_its_synthetic_twin_is_left_out(table, tmp_path):
    folders = [
        folder(tmp_path, "rd-dw-synthetic-r1", "synthetic", 1000.0, None),
        folder(tmp_path, "rd-dw-chestxray-r1", "chestxray:/data", 950.0, 15),
        folder(tmp_path, "rd-dw-chestxray-r2", "chestxray:/data", 500.0, 15),
    ]
    frame = table.rows(folders)
    key = tuple(frame.loc[0, column] for column in table.KEY)
    assert table.round_shares(frame, key, "chestxray", 15) == pytest.approx([0.95])
