"""`mgbench diff OLD NEW`: a folder against itself passes; one whose rows run half as fast fails,
naming them; runs in one folder only and a changed machine or version are named; bad input is
one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import mgbench, one_line_error
from test_reports import fixture_folder

from mgbench.reports.diff import STEPS, diff_folders
from mgbench.reports.folder_data import load_run_folder

RATES = ("images_per_sec", "images_per_sec_low", "images_per_sec_high", "images_per_sec_p10", "images_per_sec_p90")


def rewritten(source: Path, target: Path, change) -> Path:
    """A copy of the run folder `source` at `target`, each row of its results passed through `change`."""
    shutil.copytree(source, target)
    rows = [json.loads(line) for line in (target / "results.jsonl").read_text().splitlines()]
    kept = [row for row in map(change, rows) if row is not None]
    (target / "results.jsonl").write_text("".join(json.dumps(row) + "\n" for row in kept))
    return target


def slower(factor: float):
    """A row `factor` times as fast: its rate, its interval and its steps' spread scaled, its steps stretched."""

    def change(row: dict) -> dict:
        if row["status"] != "ok":
            return row
        scaled = {name: row[name] * factor for name in RATES}
        return {**row, **scaled, "step_seconds": [seconds / factor for seconds in row["step_seconds"]]}

    return change


@pytest.fixture
def old(tmp_path) -> Path:
    return fixture_folder(tmp_path)[0]


def test_a_folder_against_itself_exits_0(old):
    done = mgbench("diff", str(old), str(old))
    assert done.returncode == 0, done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("No run of NEW is slower than in OLD beyond the spread") and last.endswith("(4 compared).")
    assert "+0.0%" in done.stdout and "only in" not in done.stdout and "differs" not in done.stdout


def test_a_folder_whose_rows_run_half_as_fast_exits_1_naming_each(old, tmp_path):
    new = rewritten(old, tmp_path / "half", slower(0.5))
    done = mgbench("diff", str(old), str(new))
    assert done.returncode == 1, done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("3 of 4 runs of NEW are worse than in OLD: ")
    for run_id in ("pytorch-ddp-1cuda", "pytorch-ddp-2cuda", "pytorch-ddp-4cuda"):
        assert f"{run_id}: slower beyond the spread" in last
    assert done.stdout.count("-50.0%") == 3


def test_fail_above_sets_the_threshold_whatever_the_spread(old, tmp_path):
    """1% slower: inside the spread (the steady rate's interval, never under ±1%), so not beyond
    it; over a 0.5% threshold, under a 2% one."""
    new = rewritten(old, tmp_path / "one", slower(0.99))
    assert mgbench("diff", str(old), str(new)).returncode == 0
    done = mgbench("diff", str(old), str(new), "--fail-above", "0.5")
    assert done.returncode == 1 and "1.0% slower (over 0.5%)" in done.stdout
    assert mgbench("diff", str(old), str(new), "--fail-above", "2").returncode == 0


def test_runs_in_one_folder_only_a_run_that_failed_and_a_changed_machine_and_version_are_named(old, tmp_path):
    def change(row: dict) -> dict | None:
        if row["run_id"] == "pytorch-ddp-4cuda":
            return None
        if row["run_id"] == "pytorch-ddp-2cuda":
            return {**row, "status": "failed", "error": "boom"}
        environment = {**row["environment"], "driver": "560.35.03"} if row["environment"] else {}
        return {**row, "environment": environment, "framework_versions": {"torch": "2.6.0", "cuda": "12.4"}}

    new = rewritten(old, tmp_path / "changed", change)
    done = mgbench("diff", str(old), str(new))
    assert done.returncode == 1
    assert "only in OLD: pytorch-ddp-4cuda" in done.stdout
    assert "pytorch-ddp-2cuda: failed in NEW" in done.stdout
    assert "machine differs: driver 550.54.15 -> 560.35.03" in done.stdout
    assert "versions differ: pytorch torch 2.5.1 -> 2.6.0" in done.stdout


def test_the_diff_reads_both_folders_as_they_are(old, tmp_path):
    new = rewritten(old, tmp_path / "half", slower(0.5))
    diff = diff_folders(load_run_folder(old), load_run_folder(new))
    changes = {change.run_id: change for change in diff.changes}
    assert changes["pytorch-ddp-1cuda"].rate_change == pytest.approx(-0.5)
    assert changes["pytorch-ddp-1cuda"].beyond_spread() == -1
    assert changes["pytorch-dp-2cuda"].regression(None) is None  # failed in both: nothing to compare
    assert diff.only_old == diff.only_new == [] and diff.machine == diff.versions == diff.job == []


def test_the_spread_is_the_steady_rates_interval_and_p10_p90_where_a_folder_has_none(old, tmp_path):
    """NEW's rows run 5% slower with single steps as steady as OLD's (p10-p90 about 2.5% wide), but
    one of NEW's rounds ran as fast as OLD: its interval reaches OLD's, so within the spread. Set
    against a copy of OLD written before intervals (none in its rows), both sides fall back to
    p10-p90, and NEW is slower beyond it."""

    def noisy(row: dict) -> dict:
        if row["status"] != "ok":
            return row
        rate = row["images_per_sec"]
        return {**slower(0.95)(row), "images_per_sec_low": 0.90 * rate, "images_per_sec_high": rate}

    def before_intervals(row: dict) -> dict:
        return {key: value for key, value in row.items() if key not in ("images_per_sec_low", "images_per_sec_high")}

    new = rewritten(old, tmp_path / "noisy", noisy)
    done = mgbench("diff", str(old), str(new))
    assert done.returncode == 0, done.stdout
    assert done.stdout.count("within the spread") == 3
    assert "spread: the steady rate's interval" in done.stdout and "p10-p90 of single steps for" not in done.stdout
    older = rewritten(old, tmp_path / "older", before_intervals)
    done = mgbench("diff", str(older), str(new))
    assert done.returncode == 1 and done.stdout.strip().splitlines()[-1].startswith("3 of 4 runs of NEW are worse")
    assert "spread: p10-p90 of single steps (a folder written before" in done.stdout
    one_older = rewritten(old, tmp_path / "one", lambda row: before_intervals(row) if "1cuda" in row["run_id"] else row)
    done = mgbench("diff", str(one_older), str(new))
    assert "p10-p90 of single steps for pytorch-ddp-1cuda (a folder's row has no interval)" in done.stdout
    changes = {change.run_id: change for change in diff_folders(load_run_folder(older), load_run_folder(new)).changes}
    rate = changes["pytorch-ddp-1cuda"].new_rate
    assert rate.of == STEPS and rate.low == pytest.approx(0.95 * changes["pytorch-ddp-1cuda"].old_rate.low)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["diff", "nowhere", "nowhere"], "run folder nowhere does not exist"),
        (["diff", "OLD", "OLD", "--fail-above", "-5"], "takes a percentage of 0 or more, not '-5'"),
        (["diff", "OLD", "OLD", "--fail-above", "nan"], "takes a percentage of 0 or more, not 'nan'"),
        (["diff", "OLD"], "the following arguments are required: NEW"),
    ],
)
def test_bad_input_is_one_line(old, args, message):
    args = [str(old) if arg == "OLD" else arg for arg in args]
    assert message in one_line_error(mgbench(*args))


def test_folders_with_no_run_in_common_are_one_line(old, tmp_path):
    def renamed(row: dict) -> dict:
        return {**{key: value for key, value in row.items() if key != "run_id"}, "strategy": "dp-loss"}

    other = rewritten(old, tmp_path / "other", renamed)
    assert f"no run of {old} is in {other}" in one_line_error(mgbench("diff", str(old), str(other)))
