"""The compact summary: one line per framework/strategy, fastest first, fitting the width without
splitting a number, as a terminal table (at 80, 100 and 200 columns, terminal or pipe) and as md/csv/json."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest
from rich.console import Console

from mgbench.core.config import RunConfig
from mgbench.measure.breakdown import CATEGORIES, bottleneck
from mgbench.measure.timing import summarise_steps
from mgbench.records.results import RunResult
from mgbench.reports.compact import compact_summary, csv_text, json_text, markdown, print_compact, say, shown_columns
from mgbench.reports.readings import host_bottleneck
from mgbench.reports.spread import Spread
from mgbench.reports.summary import results_frame
from mgbench.reports.verdict import verdict

THROUGHPUT = {
    ("pytorch", "ddp"): (1234.5, 2301.7),
    ("keras-jax", "jax-shard-map"): (1100.2, 2075.9),
    ("keras-torch", "ddp"): (612.3, 980.4),
    ("keras-tf", "mirrored"): (845.6, 1490.0),
}
"""Images/sec on 1 and 2 GPUs per framework/strategy, in no order of speed."""
SHARES = (0.02, 0.01, 0.40, 0.07, 0.50)


def headline_rows() -> list[RunResult]:
    """The headline compare's rows: 4 frameworks on 1 and 2 GPUs, each with a breakdown (idle leads)."""
    rows = []
    for (framework, strategy), rates in THROUGHPUT.items():
        for devices, rate in zip((1, 2), rates, strict=True):
            config = RunConfig.flat(framework, strategy, "densenet121", devices, "cuda", 32, 20)
            step = config.global_batch / rate
            stats = summarise_steps([step] * 20, [0.0] * 20, config.global_batch)
            breakdown = dict(zip(CATEGORIES, SHARES, strict=True))
            rows.append(
                RunResult.flat(
                    config,
                    "ok",
                    **{k: v for k, v in vars(stats).items()},
                    breakdown=breakdown,
                    bottleneck=bottleneck(breakdown),
                    breakdown_clock="device",
                    peak_memory_bytes=2**30,
                )
            )
    return rows


def rendered(width: int, terminal: bool) -> str:
    summary = compact_summary(results_frame(headline_rows()), "densenet121 fp32, weak scaling, cuda")
    buffer = io.StringIO()
    print_compact(summary, Console(file=buffer, width=width, force_terminal=terminal, color_system=None))
    return buffer.getvalue()


def table_lines(text: str) -> list[str]:
    """The table's lines of a printed summary: not its notes, nor the line saying what it hid."""
    return [line for line in text.splitlines() if not line.startswith(("[", "hidden at"))]


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "pipe"])
@pytest.mark.parametrize("width", [80, 100, 200])
def test_the_table_fits_the_width_without_splitting_a_number(width, terminal):
    text = rendered(width, terminal)
    table = table_lines(text)
    assert max(len(line) for line in table) <= width
    framework_lines = {name: [line for line in table if name + " " in line] for name, _ in THROUGHPUT}
    for (framework, _), (one, two) in THROUGHPUT.items():
        assert len(framework_lines[framework]) == 1, text
        # steps of one length: an interval of the noise floor, 1% either side, so four digits shown
        assert Spread.of(two).text() in framework_lines[framework][0]
        if width >= 100:
            assert Spread.of(one).text() in framework_lines[framework][0]
    order = [min(i for i, line in enumerate(table) if name + " " in line) for name, _ in THROUGHPUT]
    speeds = [two for _, two in THROUGHPUT.values()]
    assert [name for _, name in sorted(zip(order, THROUGHPUT))] == [
        name for _, name in sorted(zip(speeds, THROUGHPUT), reverse=True)
    ]


def test_at_100_columns_the_headline_keeps_efficiency_vs_fastest_and_the_bottleneck():
    text = rendered(100, False)
    line = next(line for line in text.splitlines() if "keras-torch" in line)
    assert "1.00x" in next(line for line in text.splitlines() if "pytorch" in line)
    assert f"{980.4 / 2301.7:.2f}x" in line
    assert f"{100 * 980.4 / 612.3 / 2:.0f}%" in line
    assert "idle 50%" in line and "[1," in line
    assert "[1] idle: nothing runs on the device" in text


def test_failures_and_warnings_are_numbered_notes_and_formats_carry_the_same_lines():
    rows = headline_rows()
    rows[3] = RunResult.flat(rows[3].config, "oom", error="CUDA out of memory. Tried to allocate 2 GiB\ntraceback")
    rows[5].warnings.append("out of memory at 64 per GPU; ran at 32")
    summary = compact_summary(results_frame(rows))
    assert summary.cells.loc[summary.lines["framework"] == "keras-jax", "rate_2"].item() == "oom"
    restarted = "keras-torch ddp x2: out of memory at 64 per GPU; ran at 32"
    assert restarted in summary.notes
    assert summary.notes.index(restarted) + 1 in summary.lines.loc[2, "notes"]
    assert summary.cells.loc[2, "notes"] == f"[{','.join(str(n) for n in summary.lines.loc[2, 'notes'])}]"
    assert "keras-jax jax-shard-map x2: oom: CUDA out of memory. Tried to allocate 2 GiB" in summary.notes
    assert list(summary.lines["framework"]) == ["pytorch", "keras-tf", "keras-torch", "keras-jax"]
    records = json.loads(json_text(summary, results_frame(rows)))["lines"]
    assert records[-1]["samples_per_sec_2dev"] is None and records[0]["vs_fastest_ratio"] == 1.0
    table = pd.read_csv(io.StringIO(csv_text(summary)))
    assert table["samples_per_sec_1dev"].tolist() == pytest.approx([1234.5, 845.6, 612.3, 1100.2])
    assert "| pytorch" in markdown(summary) and "1. " in markdown(summary)


def cpu_rows(host_breakdowns: dict[str, dict[str, float]]) -> list[RunResult]:
    """A CPU compare as `make demo` leaves it: no profile (none by default on CPU devices), each row
    with the host's own timing of its steps (input wait, step call, synchronisation, loss read)."""
    rows = []
    for (framework, strategy), rates in THROUGHPUT.items():
        for devices, rate in zip((1, 2), rates, strict=True):
            config = RunConfig.flat(framework, strategy, "densenet121", devices, "cpu", 8, 20)
            stats = summarise_steps([config.global_batch / rate] * 20, [0.0] * 20, config.global_batch)
            rows.append(
                RunResult.flat(config, "ok", **vars(stats), host_breakdown=host_breakdowns.get(framework, STEP_BOUND))
            )
    return rows


STEP_BOUND = {"input_wait": 0.03, "step": 0.93, "synchronize": 0.0, "loss_read": 0.04}
INPUT_BOUND = {"input_wait": 0.31, "step": 0.66, "synchronize": 0.0, "loss_read": 0.03}
"""Host timings: one whose step call takes nearly all the step, one that waits 31% for its input."""


def test_unprofiled_cpu_rows_say_what_holds_them_back_from_host_timing():
    summary = compact_summary(results_frame(cpu_rows({"pytorch": INPUT_BOUND})))
    fastest, step_bound = summary.cells.iloc[0], summary.cells.iloc[1]
    assert fastest["framework"] == "pytorch" and fastest["bottleneck"] == "input wait 31%"
    assert step_bound["bottleneck"] == "step call 93%"
    assert "input wait (host timing, not profiled): the host waits for the next batch" in " ".join(summary.notes)
    assert summary.lines["bottleneck_source"].tolist() == ["host timing"] * 4
    assert "holds\nback" in [column.header for column in shown_columns(summary)]
    sentence = verdict(summary)
    assert sentence.startswith("pytorch ddp is fastest on 2 CPU devices: ")
    assert sentence.endswith("held back by input wait (31% of the step, host timing).")


@pytest.mark.parametrize(
    ("shares", "expected"),
    [
        (STEP_BOUND, "step"),
        ({"input_wait": 0.12, "step": 0.85, "synchronize": 0.0, "loss_read": 0.03}, "input_wait"),
        ({"input_wait": 0.02, "step": 0.70, "synchronize": 0.0, "loss_read": 0.08}, "loss_read"),
    ],
    ids=["step-bound", "material-input-wait", "step-under-80pct"],
)
def test_host_timing_names_its_bottleneck_by_the_breakdown_rule(shares, expected):
    """The step call stands in for compute: it holds the step back only at 80% with nothing else at 10%."""
    assert host_bottleneck(shares) == expected


def test_unprofiled_gpu_rows_read_host_timing_and_a_profile_is_read_over_it():
    """An unprofiled GPU row (an --epochs run) names its bottleneck from host timing, said so; a
    row with no timing at all says it was not profiled; a CPU row that was profiled reads its
    trace, not its host timing."""
    gpu = headline_rows()
    for row in gpu:
        row.profiled.breakdown, row.profiled.bottleneck, row.host_breakdown = None, None, INPUT_BOUND
    summary = compact_summary(results_frame(gpu))
    assert set(summary.cells["bottleneck"]) == {"input wait 31%"}
    assert "input wait (host timing, not profiled): the host waits" in " ".join(summary.notes)
    assert "held back by input wait (31% of the step, host timing)" in verdict(summary)
    for row in gpu:
        row.host_breakdown = None
    summary = compact_summary(results_frame(gpu))
    assert set(summary.cells["bottleneck"]) == {""}
    assert "holds\nback" not in [column.header for column in shown_columns(summary)]
    assert verdict(summary).endswith("no breakdown says what holds it back (not profiled).")
    traced = cpu_rows({})
    for row in traced:
        row.profiled.breakdown, row.profiled.breakdown_clock = dict(zip(CATEGORIES, SHARES, strict=True)), "cpu"
        row.profiled.bottleneck = bottleneck(row.profiled.breakdown)
    summary = compact_summary(results_frame(traced))
    assert summary.cells.iloc[0]["bottleneck"] == "idle 50%" and "(host timing" not in verdict(summary)


def test_a_warning_of_several_runs_is_one_note_naming_them_and_of_every_run_says_so():
    rows = headline_rows()
    unsteady = "input_wait_fraction: no value (the adapter timed no wait)"
    rows[0].warnings, rows[1].warnings = [unsteady], [unsteady]
    summary = compact_summary(results_frame(rows))
    assert f"pytorch ddp x1, pytorch ddp x2: {unsteady}" in summary.notes
    assert sum(unsteady in note for note in summary.notes) == 1
    for row in rows:
        row.warnings = [unsteady]
    summary = compact_summary(results_frame(rows))
    assert f"every run: {unsteady}" in summary.notes and sum(unsteady in note for note in summary.notes) == 1
    assert all(f"[{summary.notes.index(f'every run: {unsteady}') + 1}" in cell for cell in summary.cells["notes"])


def test_the_title_notes_and_verdict_are_printed_whole_and_unpadded():
    """At 80 columns the table fits; the title carries no padding, and each note and the verdict
    stays one line however long (the terminal wraps it, a grep finds it whole)."""
    rows = headline_rows()
    rows[2].warnings = ["a warning that runs on well past eighty columns, " * 3]
    summary = compact_summary(results_frame(rows), "densenet121 fp32, weak scaling, cuda")
    buffer = io.StringIO()
    console = Console(file=buffer, width=80, force_terminal=False, color_system=None)
    print_compact(summary, console)
    lines = buffer.getvalue().splitlines()
    assert lines[0] == "densenet121 fp32, weak scaling, cuda"
    notes = [line for line in lines if line.startswith("[")]
    assert len(notes) == len(summary.notes) and any(len(line) > 80 for line in notes)
    assert max(len(line) for line in table_lines("\n".join(lines[1:]))) <= 80


def test_the_json_answer_names_the_winner_and_every_rows_warnings_and_says_when_there_is_none():
    rows = headline_rows()
    rows[1].warnings = ["input_wait_fraction: no value (the adapter timed no wait)"]
    frame = results_frame(rows)
    answer = json.loads(json_text(compact_summary(frame, "t"), frame))
    winner = {key: answer["winner"][key] for key in ("framework", "strategy", "devices", "value")}
    assert winner == {"framework": "pytorch", "strategy": "ddp", "devices": 2, "value": pytest.approx(2301.7)}
    assert answer["verdict"] == verdict(compact_summary(frame, "t"))
    assert answer["warnings"] == [{"run_id": rows[1].run_id, "warning": rows[1].warnings[0]}]
    assert [row["run_id"] for row in answer["rows"]] == [row.run_id for row in rows]
    failed = [RunResult.flat(row.config, "failed", error="boom\ntraceback") for row in rows]
    frame = results_frame(failed)
    answer = json.loads(json_text(compact_summary(frame), frame))
    assert answer["winner"] is None and answer["verdict"].startswith("No run finished")
    assert {row["error"] for row in answer["rows"]} == {"boom"} and answer["ties"] == []


def three_count_rows() -> list[RunResult]:
    """A CPU compare on 1, 2 and 4 devices, timed by the host, with start-up and (for pytorch) compile seconds."""
    rows = []
    for index, ((framework, strategy), (one, two)) in enumerate(THROUGHPUT.items()):
        for devices, rate in zip((1, 2, 4), (one, two, 1.8 * two), strict=True):
            config = RunConfig.flat(framework, strategy, "densenet121", devices, "cpu", 8, 20)
            stats = summarise_steps([config.global_batch / rate] * 20, [0.0] * 20, config.global_batch)
            compiled = (
                {"compiler": "torch.compile (default)", "compile_seconds": 14.25} if framework == "pytorch" else {}
            )
            shares = INPUT_BOUND if index == 0 else STEP_BOUND
            row = RunResult.flat(
                config, "ok", **vars(stats), host_breakdown=shares, startup_seconds=2.0 + index, **compiled
            )
            rows.append(row)
    return rows


@pytest.mark.parametrize("width", [80, 100, 120])
def test_every_answer_is_in_the_table_or_named_as_hidden(width):
    """Each line's rates, scaling efficiencies, what holds it back and its start-up and compile
    seconds are in its row, or the line under the table names their column."""
    summary = compact_summary(results_frame(three_count_rows()), "t")
    buffer = io.StringIO()
    print_compact(summary, Console(file=buffer, width=width, force_terminal=False, color_system=None))
    text = buffer.getvalue()
    hidden = next((line for line in text.splitlines() if line.startswith("hidden at")), "")
    assert max(len(line) for line in table_lines(text)) <= width
    shown = [" ".join(column.header.split()) for column in shown_columns(summary)]
    for column, cells in zip(shown_columns(summary), summary.cells[[c.key for c in shown_columns(summary)]].T.values):
        header = " ".join(column.header.split())
        for (framework, _), cell in zip(summary.lines[["framework", "strategy"]].values, cells):
            row = next(line for line in table_lines(text) if f" {framework} " in line)
            assert cell in row or header in hidden, (header, cell, text)
    for answer in (
        "1 dev img/s",
        "2 dev img/s",
        "4 dev img/s",
        "2 dev eff.",
        "4 dev eff.",
        "holds back",
        "start-up +compile s",
    ):
        assert answer in shown
    assert "4 dev eff." not in hidden and "holds back" not in hidden  # the answers go last
    pytorch = summary.cells.iloc[0]
    assert (
        pytorch["framework"] == "pytorch"
        and pytorch["setup"] == "2.0+14.2"
        and pytorch["bottleneck"] == "input wait 31%"
    )
    assert summary.cells.iloc[1]["setup"] == "3.0"  # nothing compiled its step
    if width == 80:
        assert "range" in hidden and "--format md" in hidden


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "pipe"])
def test_notes_and_verdict_wrap_at_word_ends_in_a_terminal_and_stay_one_line_piped(terminal):
    rows = headline_rows()
    rows[2].warnings = ["a warning that runs on well past eighty columns, " * 3]
    frame = results_frame(rows)
    summary = compact_summary(frame, "densenet121 fp32")
    buffer = io.StringIO()
    console = Console(file=buffer, width=80, force_terminal=terminal, color_system=None)
    print_compact(summary, console)
    say(console, verdict(summary))
    lines = buffer.getvalue().splitlines()
    prose = lines[lines.index(next(line for line in lines if line.startswith("[1]"))) :]
    said = [f"[{number}] {note}" for number, note in enumerate(summary.notes, start=1)] + [verdict(summary)]
    if terminal:
        assert max(len(line) for line in prose) <= 80 and len(prose) > len(said)
        assert " ".join(prose).split() == " ".join(said).split()  # every word whole, in order
    else:
        assert prose == said
