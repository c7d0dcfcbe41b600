"""A compare's time: the estimate from the runs' history on this machine, the time left as rounds
end (failed runs owe no more), the history kept per run, and the phase a run's log says."""

from pathlib import Path

import pytest

from mgbench.cli.live import MIN_HEARTBEAT_SECONDS, RunLog, heartbeat_seconds
from mgbench.core.config import RunConfig
from mgbench.records.figures import Compilation
from mgbench.records.results import RunResult
from mgbench.runner.estimate import ROUGH_ROUND_SECONDS, CompareClock
from mgbench.runner.history import KEPT, Round, RunHistory
from mgbench.runner.orchestrator import RunEvent
from mgbench.runner.plan import replan
from mgbench.runner.rounds import RoundBook

FAST = RunConfig.flat("pytorch", "ddp", "tiny", 1, "cpu", 2, 4)
SLOW = RunConfig.flat("pytorch", "ddp", "tiny", 2, "cpu", 2, 4)


def clock_of(tmp_path: Path, recorded: dict[RunConfig, list[Round]], repeat: int = 3, cold: bool = False):
    history = RunHistory(tmp_path / "run-times.json", {})
    for config, rounds in recorded.items():
        for taken in rounds:
            history.record(config, taken)
    book = RoundBook([replan(FAST), replan(SLOW)], repeat)
    return CompareClock(book, RunHistory.read(tmp_path / "run-times.json"), cold=cold), book


def ended(clock: CompareClock, book: RoundBook, config: RunConfig, status: str, seconds: float, cache=None) -> None:
    clock.on_event(RunEvent("start", config, Path("log")))
    clock.round_started -= seconds
    result = RunResult(config, status, compiled=Compilation("xla (always)", 1.0, cache))
    book.done.setdefault(config.run_id, []).append(result)
    clock.on_result(result)


def test_the_estimate_is_the_median_of_the_recorded_rounds_of_each_run_times_its_rounds(tmp_path):
    clock, _ = clock_of(tmp_path, {FAST: [Round(10.0), Round(12.0), Round(50.0)], SLOW: [Round(100.0)]})
    assert clock.estimate.seconds == pytest.approx(3 * 12.0 + 3 * 100.0)
    assert clock.estimate.line() == "estimate: about 6 min (from earlier runs on this machine)"


def test_a_run_with_no_record_is_guessed_and_the_estimate_says_it_is_rough(tmp_path):
    clock, _ = clock_of(tmp_path, {FAST: [Round(10.0)]})
    assert clock.estimate.seconds == pytest.approx(3 * 10.0 + 3 * ROUGH_ROUND_SECONDS)
    assert clock.estimate.line().startswith("estimate: about 4 min (rough: 3 of 6 rounds from earlier runs")


def test_a_cold_compare_is_estimated_from_cold_rounds_and_a_warm_one_from_the_others(tmp_path):
    rounds = [Round(100.0, "cold"), Round(40.0, "warm"), Round(40.0, "warm")]
    warm, _ = clock_of(tmp_path / "warm", {FAST: rounds, SLOW: rounds})
    cold, _ = clock_of(tmp_path / "cold", {FAST: rounds, SLOW: rounds}, cold=True)
    assert (warm.estimate.seconds, cold.estimate.seconds) == (240.0, 600.0)


def test_time_left_follows_the_rounds_that_ran_and_a_failed_run_owes_no_more(tmp_path):
    clock, book = clock_of(tmp_path, {FAST: [Round(10.0)], SLOW: [Round(100.0)]})
    ended(clock, book, FAST, "ok", 20.0, "cold")  # a cold first round: the warm ones after are estimated from history
    assert clock.left().seconds == pytest.approx(2 * 10.0 + 3 * 100.0)
    ended(clock, book, SLOW, "failed", 5.0)
    assert clock.left().seconds == pytest.approx(2 * 10.0)
    ended(clock, book, FAST, "ok", 8.0, "warm")  # this compare's own warm round rules its last
    assert clock.left().seconds == pytest.approx(8.0, abs=0.1)
    clock.on_event(RunEvent("start", FAST, Path("log")))
    clock.round_started -= 3.0
    assert clock.left().seconds == pytest.approx(5.0, abs=0.5)


def test_the_history_keeps_the_last_rounds_of_each_run_under_its_whole_configuration(tmp_path):
    history = RunHistory(tmp_path / "run-times.json", {})
    for seconds in range(KEPT + 2):
        history.record(FAST, Round(float(seconds), "warm"))
    read = RunHistory.read(tmp_path / "run-times.json")
    assert [r.seconds for r in read.of(FAST)] == [float(s) for s in range(2, KEPT + 2)]
    assert read.of(SLOW) == [] and read.of(FAST.with_changes(batch_per_device=4)) == []
    (tmp_path / "run-times.json").write_text("[1, 2")  # damaged: no times, never an error
    assert RunHistory.read(tmp_path / "run-times.json").rounds == {}


def test_a_runs_phase_is_read_from_its_log_as_it_grows(tmp_path):
    path = tmp_path / "run.log"
    path.write_text("Using backend\n")
    log = RunLog(path)
    assert log.read().phase == "start-up"
    with path.open("a") as handle:
        handle.write("phase: compile\n")
    assert log.read().phase == "compile"
    with path.open("a") as handle:
        handle.write("compile step: 3.0 s\nphase: warm-up\nstep 1/10: 5.0 img")
    assert log.read().phase == "warm-up" and log.step is None  # a line not yet whole is not read
    with path.open("a") as handle:
        handle.write("/s (host clock)\nphase: evaluation\n")
    assert log.read().phase == "evaluation" and (log.step.done, log.step.total) == (1, 10)


def test_a_heartbeat_shorter_than_the_floor_is_the_floor(monkeypatch):
    monkeypatch.setenv("MGBENCH_HEARTBEAT_SECONDS", "1e-9")
    assert heartbeat_seconds() == MIN_HEARTBEAT_SECONDS
    monkeypatch.setenv("MGBENCH_HEARTBEAT_SECONDS", "2.5")
    assert heartbeat_seconds() == 2.5
