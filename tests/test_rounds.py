"""Rounds (`compare --repeat N`): every run N times, interleaved, each row the median round's with
every round's figure and the spread beside it; `--resume` keeps the rounds already done."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from conftest import mgbench, one_line_error, read_rows, tiny_job

from mgbench.core.config import RunConfig
from mgbench.core.kinds import DeviceKind
from mgbench.records.finished import combine_rounds
from mgbench.records.results import RunResult, read_results
from mgbench.records.runfolder import RunFolder
from mgbench.runner.plan import replan
from mgbench.runner.rounds import CPU_ROUNDS, GPU_ROUNDS, RoundBook, default_rounds, recorded_rounds

FAKE_ROUNDS = ("--frameworks", "fake", "--strategies", "steady,flaky", "--gpus", "1", *tiny_job(12, device="cpu"))


def rounds_file(out) -> pd.DataFrame:
    return pd.read_json(out / "rounds.jsonl", lines=True)


def test_repeat_runs_every_run_n_times_interleaved_and_each_row_is_the_median_round(tmp_path):
    out = tmp_path / "rounds"
    done = mgbench("compare", *FAKE_ROUNDS, "--repeat", "3", "--out", str(out))
    assert done.returncode == 0, done.stderr
    rounds = rounds_file(out)
    # all runs once, then all again: drift falls on every row alike
    assert list(zip(rounds["round"], rounds["strategy"])) == [
        (1, "steady"), (1, "flaky"), (2, "steady"), (2, "flaky"), (3, "steady"), (3, "flaky"),
    ]  # fmt: skip
    rows = read_rows(out).set_index("strategy")
    for strategy, row in rows.iterrows():
        own = rounds[rounds["strategy"] == strategy]
        assert row["rounds"] == 3 and row["round_samples_per_sec"] == pytest.approx(list(own["samples_per_sec"]))
        assert row["samples_per_sec"] == pytest.approx(sorted(own["samples_per_sec"])[1])
        assert row["samples_per_sec_low"] == pytest.approx(own["samples_per_sec_low"].min())
        assert row["samples_per_sec_high"] == pytest.approx(own["samples_per_sec_high"].max())
        assert row["samples_per_sec_low"] < row["samples_per_sec"] < row["samples_per_sec_high"]
    assert "round 3/3" in done.stderr
    assert json.loads((out / "compare.json").read_text())["options"]["repeat"] == 3


@pytest.mark.slow
def test_resume_keeps_the_rounds_done_and_runs_the_rest(tmp_path):
    out = tmp_path / "resume"
    first = mgbench("compare", *FAKE_ROUNDS, "--repeat", "2", "--out", str(out), FAKE_FAIL="1")
    assert first.returncode == 1, first.stderr
    rounds = rounds_file(out)
    # a run whose round failed is not run again in later rounds
    assert list(zip(rounds["round"], rounds["strategy"], rounds["status"])) == [
        (1, "steady", "ok"), (1, "flaky", "failed"), (2, "steady", "ok"),
    ]  # fmt: skip
    kept = (out / "rounds.jsonl").read_text().splitlines()
    resumed = mgbench("compare", "--resume", str(out), "--repeat", "3", FAKE_FAIL="0")
    assert resumed.returncode == 0, resumed.stderr
    lines = (out / "rounds.jsonl").read_text().splitlines()
    assert lines[0] == kept[0] and lines[1] == kept[2]  # steady's two rounds kept as they were, not rerun
    rounds = rounds_file(out)
    assert sorted(zip(rounds["strategy"], rounds["round"])) == [
        ("flaky", 1), ("flaky", 2), ("flaky", 3), ("steady", 1), ("steady", 2), ("steady", 3),
    ]  # fmt: skip
    assert set(rounds["status"]) == {"ok"} and list(read_rows(out)["rounds"]) == [3, 3]
    assert json.loads((out / "compare.json").read_text())["options"]["repeat"] == 3


@pytest.mark.slow
def test_a_folder_written_before_rounds_resumes_with_its_rows_as_round_one(tmp_path):
    out = tmp_path / "old"
    assert mgbench("compare", *FAKE_ROUNDS, "--out", str(out)).returncode == 0
    (out / "rounds.jsonl").unlink()
    plan = json.loads((out / "compare.json").read_text())
    del plan["options"]["repeat"]
    (out / "compare.json").write_text(json.dumps(plan))
    old = {json.loads(line)["strategy"]: line for line in (out / "results.jsonl").read_text().splitlines()}
    resumed = mgbench("compare", "--resume", str(out), "--repeat", "2")
    assert resumed.returncode == 0, resumed.stderr
    rounds = rounds_file(out)
    assert list(zip(rounds["round"], rounds["strategy"])) == [(1, "steady"), (1, "flaky"), (2, "steady"), (2, "flaky")]
    first = json.loads((out / "rounds.jsonl").read_text().splitlines()[0])
    assert first["started_at"] == json.loads(old["steady"])["started_at"]


@pytest.mark.parametrize("value", ["0", "-1", "two"])
def test_repeat_takes_a_number_of_rounds(tmp_path, value):
    line = one_line_error(mgbench("compare", *FAKE_ROUNDS, "--repeat", value, "--out", str(tmp_path / "x")))
    assert "--repeat" in line and not (tmp_path / "x").exists()


def test_gpus_run_three_rounds_by_default_cpu_devices_one():
    assert default_rounds(DeviceKind("cuda")) == GPU_ROUNDS == 3
    assert default_rounds(DeviceKind("cpu")) == CPU_ROUNDS == 1


def round_row(rate: float, low: float, high: float, status: str = "ok", **config) -> RunResult:
    run = RunConfig.flat("fake", "steady", "tiny", 1, "cpu", 8, 20, **config)
    if status != "ok":
        return RunResult.flat(run, status, error=f"{status} on purpose\ntraceback")
    return RunResult.flat(run, "ok", samples_per_sec=rate, samples_per_sec_low=low, samples_per_sec_high=high)


def test_the_row_is_the_median_round_or_of_two_the_slower():
    three = combine_rounds([round_row(100, 95, 104), round_row(120, 118, 123), round_row(90, 80, 99)])
    assert (three.timing.samples_per_sec, three.repeats.rounds, three.repeats.round_samples_per_sec) == (
        100,
        3,
        [100, 120, 90],
    )
    assert (three.timing.samples_per_sec_low, three.timing.samples_per_sec_high) == (80, 123)
    assert combine_rounds([round_row(120, 118, 123), round_row(100, 95, 104)]).timing.samples_per_sec == 100


def test_a_round_that_did_not_finish_is_said_and_the_others_make_the_row():
    row = combine_rounds([round_row(100, 95, 104), round_row(0, 0, 0, status="timeout")])
    assert row.status == "ok" and row.repeats.rounds == 1 and row.timing.samples_per_sec == 100
    assert row.warnings == ["round 2 of 2: timeout: timeout on purpose"]
    assert combine_rounds([round_row(0, 0, 0, status="failed")]).status == "failed"


def test_epochs_rounds_take_the_median_time_to_train_and_keep_every_rounds_time():
    def trained(seconds: float, rate: float) -> RunResult:
        row = round_row(rate, rate, rate, dataset="chestxray:/data", epochs=2)
        row.by_epoch.time_to_train_seconds = seconds
        return row

    row = combine_rounds([trained(30.0, 500), trained(20.0, 400), trained(25.0, 300)])
    assert row.by_epoch.time_to_train_seconds == 25.0 and row.timing.samples_per_sec == 300
    assert (
        row.repeats.round_time_to_train_seconds == [30.0, 20.0, 25.0] and row.repeats.round_time_to_target_seconds == []
    )


def test_a_round_a_resume_adds_to_the_smallest_count_rewrites_the_speed_up_of_every_row_against_it(
    tmp_path, fake_plugin
):
    """Round 1 on 1 and 2 devices (100 and 180 img/s): the 2-device row's speed-up is 1.8 as soon
    as its round is written. A resume with `--repeat 2` adds a round of 60 img/s to the 1-device
    run alone (its row now the slower round of two): the 2-device row, whose rounds did not
    change, is rewritten at 180 / 60 = 3.0, and the rows read back are the rows the book holds."""
    runs = [replan(RunConfig.flat("fake", "steady", "tiny", devices, "cpu", 8, 20)) for devices in (1, 2)]
    folder = RunFolder(tmp_path)
    book = RoundBook(runs, 1)
    for run, rate in zip(runs, (100.0, 180.0)):
        book.record(folder, RunResult.flat(run.config, "ok", samples_per_sec=rate))
    assert list(read_rows(tmp_path).speedup) == pytest.approx([1.0, 1.8])
    resumed = RoundBook.kept(runs, 2, recorded_rounds(folder))
    resumed.rewrite(folder)
    assert [run.config.devices for run in resumed.owed()] == [1, 2]
    resumed.record(folder, RunResult.flat(runs[0].config, "ok", samples_per_sec=60.0))
    rows = read_rows(tmp_path)
    assert list(rows.samples_per_sec) == [60.0, 180.0] and list(rows.rounds) == [2, 1]
    assert list(rows.speedup) == pytest.approx([1.0, 3.0])
    assert list(rows.scaling_efficiency_fraction) == pytest.approx([1.0, 1.5])
    assert [row.to_record() for row in read_results(folder.results)] == [row.to_record() for row in resumed.rows()]
