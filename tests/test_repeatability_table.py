"""benchmarks/repeatability_table.py: how far a row moves from one compare of a command to the next."""

import json
from pathlib import Path

import pytest
from conftest import benchmark_script


@pytest.fixture(scope="module")
def table():
    return benchmark_script("repeatability_table")


def folder(root: Path, name: str, rate: float) -> str:
    path = root / name
    path.mkdir()
    row = {"framework": "pytorch", "strategy": "ddp", "devices": 1, "status": "ok", "samples_per_sec": rate}
    row |= {"samples_per_sec_low": rate - 10, "samples_per_sec_high": rate + 10, "round_samples_per_sec": [rate, rate]}
    row |= {"bottleneck": "compute", "warmup_steps": 3}
    failed = {**row, "strategy": "dp", "status": "failed", "samples_per_sec": None}
    (path / "results.jsonl").write_text(json.dumps(row) + "\n" + json.dumps(failed) + "\n")
    return str(path)


def test_each_part_and_row_gets_the_spread_of_its_compares(table, tmp_path):
    folders = [
        folder(tmp_path, "repeat-default-1", 800.0),
        folder(tmp_path, "repeat-default-2", 840.0),
        folder(tmp_path, "repeat-default-3", 820.0),
        folder(tmp_path, "repeat-real-1", 500.0),
        folder(tmp_path, "repeat-real-2", 500.0),
    ]
    lines = table.table(table.rows(folders)).set_index("part")
    assert lines.loc["default", "spread %"] == pytest.approx(100 * 40 / 820, abs=0.05)
    assert lines.loc["real", "spread %"] == 0
    assert lines.loc["default", "compares"].startswith("800 (790-810; rounds 800, 800; compute, warm-up 3); 840")
    assert len(lines) == 2


def test_a_folder_not_named_by_part_and_compare_is_refused(table, tmp_path):
    with pytest.raises(SystemExit, match="not named"):
        table.rows([folder(tmp_path, "somewhere", 800.0)])
