"""`mgbench diff OLD NEW`: a folder against itself passes; one whose rows run half as fast fails,
naming them; runs in one folder only and a changed machine or version are named; bad input is
one line."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from conftest import mgbench, one_line_error
from test_reports import fixture_folder

from mgbench.cli import main
from mgbench.reports.diff import STEPS, diff_folders
from mgbench.reports.folder_data import load_run_folder

RATES = ("samples_per_sec", "samples_per_sec_low", "samples_per_sec_high", "samples_per_sec_p10", "samples_per_sec_p90")


def rewritten(source: Path, target: Path, change) -> Path:
    """A copy of the run folder `source` at `target`, each row of its results passed through
    `change`, which gives a row, None (no row) or a list of rows (rows in the order given)."""
    shutil.copytree(source, target)
    rows = [json.loads(line) for line in (target / "results.jsonl").read_text().splitlines()]
    changed = [change(row) for row in rows]
    kept = [row for rows in changed for row in (rows if isinstance(rows, list) else [rows]) if row is not None]
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
        rate = row["samples_per_sec"]
        return {**slower(0.95)(row), "samples_per_sec_low": 0.90 * rate, "samples_per_sec_high": rate}

    def before_intervals(row: dict) -> dict:
        return {key: value for key, value in row.items() if key not in ("samples_per_sec_low", "samples_per_sec_high")}

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


@pytest.fixture
def diff(capsys: pytest.CaptureFixture):
    """`diff(*ARGS)`: `mgbench diff ARGS` run in this process, its exit code and output as a
    finished subprocess's."""

    def run(*args: str | Path) -> subprocess.CompletedProcess:
        code = main(["diff", *map(str, args)])
        captured = capsys.readouterr()
        return subprocess.CompletedProcess(args, code, captured.out, captured.err)

    return run


def twice(row: dict) -> list[dict]:
    return [row, row]


def test_a_run_written_twice_is_read_once_as_its_last_row(old, tmp_path, diff):
    """`mgbench run --out DIR` twice leaves two rows of one run: each folder is read as one row
    per run, its last, so NEW 50 times slower is caught however the rows repeat, and the table
    counts each run once."""
    doubled = rewritten(old, tmp_path / "doubled", twice)
    slow = rewritten(old, tmp_path / "slow", lambda row: twice(slower(1 / 50)(row)))
    done = diff(doubled, slow)
    assert done.returncode == 1, done.stdout
    assert done.stdout.strip().splitlines()[-1].startswith("3 of 4 runs of NEW are worse than in OLD")
    assert "4 earlier rows of runs written again to results.jsonl are left out" in done.stdout
    done = diff(slow, doubled)
    assert done.returncode == 0 and "(4 compared)" in done.stdout and "dtype" not in done.stdout
    rerun = rewritten(old, tmp_path / "rerun", lambda row: [row, slower(1 / 50)(row)])  # the slow row last
    assert diff(old, rerun).returncode == 1
    assert diff(old, rewritten(old, tmp_path / "fixed", lambda row: [slower(1 / 50)(row), row])).returncode == 0


def test_the_conclusion_counts_one_run_as_one(old, tmp_path, diff):
    """Folders of one run: `1 of 1 run of NEW is worse`, never `1 of 1 runs ... are`."""

    def only_one(row: dict) -> dict | None:
        return row if row["run_id"] == "pytorch-ddp-1cuda" else None

    one = rewritten(old, tmp_path / "one", only_one)
    done = diff(one, rewritten(one, tmp_path / "slow", slower(0.5)))
    assert done.returncode == 1, done.stdout
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("1 of 1 run of NEW is worse than in OLD: pytorch-ddp-1cuda: slower beyond the spread")
    two = rewritten(
        old, tmp_path / "two", lambda row: row if row["devices"] in (1, 2) and row["status"] == "ok" else None
    )
    done = diff(
        two, rewritten(two, tmp_path / "two-slow", lambda row: slower(0.5)(row) if row["devices"] == 1 else row)
    )
    assert done.stdout.strip().splitlines()[-1].startswith("1 of 2 runs of NEW is worse than in OLD: pytorch-ddp-1cuda")


@pytest.mark.parametrize("rate", ["null", "absent", "1e999", "Infinity", "0"])
def test_an_ok_row_without_a_finite_positive_rate_is_left_out_and_its_run_is_worse(old, tmp_path, diff, rate):
    """Such a line is no row (`docs/faults.md`): NEW has no row of that run, which is worse than
    OLD's, and the line left out is said."""

    def unmeasured(row: dict) -> dict:
        if row["run_id"] != "pytorch-ddp-1cuda":
            return row
        return {key: value for key, value in row.items() if key != "samples_per_sec"} | (
            {} if rate == "absent" else {"samples_per_sec": "RATE"}
        )

    new = rewritten(old, tmp_path / "new", unmeasured)
    (new / "results.jsonl").write_text((new / "results.jsonl").read_text().replace('"RATE"', rate))
    done = diff(old, new)
    assert done.returncode == 1, done.stdout
    assert "pytorch-ddp-1cuda: no row in NEW" in done.stdout.splitlines()[-1]
    assert f"NEW ({new}): 1 line of results.jsonl could not be read and is left out." in done.stdout


def test_a_torn_last_line_is_said(old, tmp_path, diff):
    new = rewritten(old, tmp_path / "torn", lambda row: row)
    with (new / "results.jsonl").open("a") as handle:
        handle.write('{"framework": "pyto')
    done = diff(old, new)
    assert done.returncode == 0
    assert f"NEW ({new}): 1 line of results.jsonl could not be read and is left out." in done.stdout


def test_machine_and_versions_are_set_apart_only_where_both_folders_recorded_them(old, tmp_path, diff):
    """NEW's rows all failed before measuring: they recorded no machine and no versions, so none
    is said to differ; the failures are the regression."""

    def failed(row: dict) -> dict:
        return {**row, "status": "failed", "error": "boom", "environment": {}, "framework_versions": {}}

    done = diff(old, rewritten(old, tmp_path / "failed", failed))
    assert done.returncode == 1
    assert "differ" not in done.stdout and "None" not in done.stdout
    assert done.stdout.splitlines()[-1].count("failed in NEW") == 3


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"model": "tiny"}, "model densenet121 -> tiny"),
        ({"image_size": 128}, "image size 224 -> 128"),
        ({"precision": "fp32"}, "precision bf16 -> fp32"),
        ({"batch_per_device": 64}, "batch per device 32 -> 64"),
    ],
)
def test_runs_that_trained_other_work_are_not_compared(old, tmp_path, diff, changes, named):
    new = rewritten(old, tmp_path / "other", lambda row: {**row, **changes})
    line = one_line_error(diff(old, new))
    assert "trained other work, whose images/sec do not compare" in line and named in line
    assert "pytorch-ddp-1cuda, pytorch-ddp-2cuda, pytorch-ddp-4cuda, pytorch-dp-2cuda" in line


def test_a_batch_halved_by_running_out_of_memory_and_other_steps_are_compared(old, tmp_path, diff):
    """The job asked for the same batch: NEW ran out of memory and ran half of it, which is NEW's
    doing, so it is compared. More steps are named but leave images/sec comparable."""

    def halved(row: dict) -> dict:
        if row["run_id"] != "pytorch-ddp-1cuda":
            return {**row, "steps": 80}
        halved_row = {**slower(0.5)(row), "batch_per_device": 16, "global_batch": 16}
        return {**halved_row, "requested_batch_per_device": 32, "oom_retries": 1, "steps": 80}

    done = diff(old, rewritten(old, tmp_path / "halved", halved))
    assert done.returncode == 1, done.stderr
    assert "pytorch-ddp-1cuda: slower beyond the spread" in done.stdout.splitlines()[-1]
    assert "job differs: steps 40 -> 80" in done.stdout


def test_json_is_the_answer_for_a_script(old, tmp_path, diff):
    new = rewritten(old, tmp_path / "half", slower(0.5))
    done = diff(old, new, "--format", "json")
    assert done.returncode == 1
    answer = json.loads(done.stdout, parse_constant=lambda name: pytest.fail(f"{name} in the JSON"))
    assert answer["regressed"] is True and answer["compared"] == 4
    runs = pd.DataFrame(answer["runs"]).set_index("run_id")
    assert runs.loc["pytorch-ddp-1cuda", "change"] == pytest.approx(-0.5)
    assert runs.loc["pytorch-ddp-1cuda", "regression"] == "slower beyond the spread"
    failed = answer["runs"][[run["run_id"] for run in answer["runs"]].index("pytorch-dp-2cuda")]
    assert failed["old_samples_per_sec"] is None and failed["change"] is None and failed["regression"] is None
    assert runs.loc["pytorch-ddp-2cuda", "new_samples_per_sec"] == pytest.approx(
        runs.loc["pytorch-ddp-2cuda", "old_samples_per_sec"] / 2
    )
    assert answer["conclusion"].startswith("3 of 4 runs of NEW are worse") and answer["only_old"] == []


def test_markdown_is_a_table_and_its_sentences(old, tmp_path, diff):
    new = rewritten(old, tmp_path / "half", slower(0.5))
    done = diff(old, new, "--format", "md")
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert lines[0] == "| run | OLD img/s (spread) | NEW img/s (spread) | change | NEW against OLD |"
    assert lines[1] == "|:---|---:|---:|---:|:---|"
    table = [line for line in lines if line.startswith("| pytorch")]
    assert len(table) == 4 and all(line.count("|") == 6 for line in table)
    assert "| pytorch-ddp-1cuda | 159.9 (158-162) | 80.0 (79-81) | -50.0% | slower beyond the spread |" in lines
    assert lines[-1].startswith("3 of 4 runs of NEW are worse")


def test_an_80_column_terminal_shows_every_answer_column_or_says_what_it_left_out(old, tmp_path, diff, monkeypatch):
    """At 80 columns the spreads are left out, saying so, and every run's figures and verdict are
    shown whole (the verdict wrapped at a space where it must be)."""
    new = rewritten(old, tmp_path / "half", slower(0.5))
    monkeypatch.setenv("COLUMNS", "80")
    done = diff(old, new)
    lines = done.stdout.splitlines()
    table = [line for line in lines if line[0] in "┏┃┡│└"]
    assert all(len(line) <= 80 for line in table) and "…" not in done.stdout
    assert "left out at this width: the spreads; see them with --format md" in done.stdout
    start = next(number for number, line in enumerate(table) if "pytorch-ddp-1cuda" in line)
    cells = [[cell.strip() for cell in line.strip("│").split("│")] for line in table[start : start + 2]]
    assert cells[0][:4] == ["pytorch-ddp-1cuda", "159.9", "80.0", "-50.0%"]
    assert " ".join(row[4] for row in cells if row[4]) == "slower beyond the spread"
