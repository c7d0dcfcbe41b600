"""A compare's closing lines: every run short of its rounds named with why, and the exit status
with its reason; a compare that measured nothing exits 1."""

from __future__ import annotations

from conftest import mgbench, tiny_job

from mgbench.cli.closing import closing_lines, exit_status, run_accounts
from mgbench.core.config import RunConfig
from mgbench.frameworks.registry import framework_spec
from mgbench.records.results import RunResult
from mgbench.runner.plan import PlannedRun
from mgbench.runner.rounds import RoundBook

PLUGINS = "fakefw,fakefw_absent"


def last_lines(stderr: str, count: int) -> list[str]:
    """The last `count` lines of a compare's stderr, each joined whole (a terminal's wrap undone)."""
    return [" ".join(line.split()) for line in stderr.strip().splitlines()[-count:]]


def test_a_line_that_timed_out_and_one_not_installed_are_named_with_why_and_the_exit_code(tmp_path):
    done = mgbench(
        "compare",
        "--frameworks",
        "fake,absent",
        "--gpus",
        "1",
        *tiny_job(100000, batch=2),
        "--timeout",
        "3",
        "--repeat",
        "2",
        "--out",
        str(tmp_path / "run"),
        MGBENCH_PLUGINS=PLUGINS,
    )
    assert done.returncode == 1, done.stderr
    timed_out, absent, ending = last_lines(done.stderr, 3)
    assert timed_out.startswith("fake steady x1: no figure: 1 of 2 rounds run: timed out in round 1, not run again: ")
    assert absent.startswith("absent only x1: no figure: not installed: ")
    assert "pip install mgbench-no-such-package" in absent
    assert ending == "exit 1: 2 of 2 lines did not run in full (fake steady timed out; absent only not installed)"


def test_a_compare_that_measured_nothing_exits_1_and_says_why(tmp_path):
    done = mgbench(
        "compare",
        "--frameworks",
        "fake",
        "--gpus",
        "2",
        *tiny_job(4, batch=2),
        "--precision",
        "bf16",
        "--out",
        str(tmp_path / "run"),
        MGBENCH_PLUGINS=PLUGINS,
    )
    assert done.returncode == 1, done.stderr
    refused, ending = last_lines(done.stderr, 2)
    assert refused == "fake steady x1, x2: no figure: unsupported: fake trains in fp32 only, not bf16"
    assert ending == "exit 1: nothing was measured: every run of 1 line was refused as unsupported"


def row(config: RunConfig, status: str, error: str | None = None) -> RunResult:
    return RunResult.flat(config, status, error=error, samples_per_sec=10.0 if status == "ok" else None)


def test_rounds_not_run_are_counted_and_a_figure_from_fewer_rounds_is_said(fake_plugin):
    """A run ok in round 1 and out of memory in round 2 of 3 keeps a figure of one round; a run
    never reached (interrupted before its turn) says so; a compare with every run in full exits 0."""
    spec = framework_spec("fake")
    runs = [
        PlannedRun(RunConfig.flat("fake", "steady", "tiny", devices, "cpu", 2, 4), spec, spec.strategy("steady"))
        for devices in (1, 2)
    ]
    book = RoundBook(runs, 3)
    book.rounds_of(runs[0]).extend([row(runs[0].config, "ok"), row(runs[0].config, "oom", "out of memory\ntrace")])
    accounts = run_accounts(book)
    assert closing_lines(accounts) == [
        "fake steady x1: figure of 1 round: 2 of 3 rounds run: out of memory in round 2, not run again: out of memory",
        "fake steady x2: no figure: 0 of 3 rounds run: not run: the compare stopped before its turn",
    ]
    assert exit_status(accounts, interrupted=True).text == "exit 130: interrupted; 1 of 1 line short of their rounds"
    assert exit_status(accounts, interrupted=False).code == 1
    full = RoundBook(runs, 1)
    for run in runs:
        full.rounds_of(run).append(row(run.config, "ok"))
    assert closing_lines(run_accounts(full)) == []
    assert exit_status(run_accounts(full), interrupted=False).text == "exit 0: every run that could run was measured"


def test_a_columns_of_no_width_is_read_as_unset(tmp_path):
    """`COLUMNS=0` (or negative, or not a number) says no width: compare still prints its table,
    verdict, paths and closing lines, and `report --format table` its table."""
    out = tmp_path / "run"
    job = [*tiny_job(4, batch=2), "--precision", "bf16", "--out", str(out)]
    done = mgbench("compare", "--frameworks", "fake", "--gpus", "2", *job, MGBENCH_PLUGINS=PLUGINS, COLUMNS="0")
    assert "│ fake" in done.stdout and "No run finished" in done.stdout, done.stdout
    assert f"results: {out / 'results.jsonl'}" in done.stderr and "exit 1: nothing was measured" in done.stderr
    for columns in ("0", "-3", "wide"):
        shown = mgbench("report", str(out), "--format", "table", MGBENCH_PLUGINS=PLUGINS, COLUMNS=columns)
        assert shown.returncode == 0 and "│ fake" in shown.stdout and "No run finished" in shown.stdout, shown
