"""The verdict and the table it sits under: a tie within noise is called a tie and never ranked,
figures show only the digits their interval supports, compiled and eager lines are told apart, a
line held back by launch overhead is told to try --compile, and an epochs row too short to time or
whose model has not learned is said, with what to change."""

from __future__ import annotations

import dataclasses
import json

import pandas as pd
import pytest

from mgbench.core.config import RunConfig
from mgbench.measure.breakdown import CATEGORIES, bottleneck
from mgbench.measure.timing import summarise_steps
from mgbench.records.results import RunResult
from mgbench.reports.caveats import MIN_STEADY_STEPS
from mgbench.reports.compact import TIE, compact_summary, json_text
from mgbench.reports.spread import NOISE_FLOOR, Spread
from mgbench.reports.summary import OUTSIDE_P10, display_table, results_frame
from mgbench.reports.verdict import judge, verdict

IDLE_BOUND = dict(zip(CATEGORIES, (0.02, 0.01, 0.40, 0.07, 0.50), strict=True))


def line_row(
    framework: str,
    strategy: str,
    rate: float,
    low: float | None = None,
    high: float | None = None,
    devices: int = 2,
    **figures,
) -> RunResult:
    """An ok row of `rate` img/s measured between `low` and `high` (the noise floor without them)."""
    config = RunConfig.flat(framework, strategy, "densenet121", devices, "cuda", 32, 60)
    stats = summarise_steps([config.global_batch / rate] * 60, [0.0] * 60, config.global_batch)
    values = {**vars(stats), "samples_per_sec_low": low or rate, "samples_per_sec_high": high or rate, "rounds": 3}
    return RunResult.flat(config, "ok", **{**values, **figures})


def summary_of(rows: list[RunResult]):
    return compact_summary(results_frame(rows), "densenet121 fp32")


def test_rows_whose_intervals_overlap_tie_and_are_not_ranked():
    rows = [
        line_row("pytorch", "ddp", 1000.0, 960.0, 1040.0),
        line_row("pytorch", "ddp-unstaged", 990.0, 950.0, 1020.0),
        line_row("chainer", "chainermn", 600.0, 590.0, 610.0),
    ]
    summary = summary_of(rows)
    assert list(summary.lines["tie"]) == [False, True, False]
    assert list(summary.cells["vs_fastest"]) == ["1.00x", TIE, "0.60x"]
    sentence = verdict(summary)
    assert sentence.startswith(
        "pytorch ddp and pytorch ddp-unstaged tie within noise for fastest on 2 GPUs: "
        "1,000 img/s [960-1,040] and 990 img/s [950-1,020]; 1.67x the next, chainer chainermn;"
    )
    assert "is fastest" not in sentence and "x pytorch ddp-unstaged" not in sentence


def test_rows_apart_beyond_their_intervals_are_ranked_with_the_lead():
    rows = [line_row("pytorch", "ddp", 1000.0, 980.0, 1020.0), line_row("horovod", "hvd", 900.0, 880.0, 930.0)]
    summary = summary_of(rows)
    assert list(summary.cells["vs_fastest"]) == ["1.00x", "0.90x"] and not summary.lines["tie"].any()
    assert verdict(summary).startswith("pytorch ddp is fastest on 2 GPUs: 1,000 img/s [980-1,020], 1.11x horovod hvd;")


def test_a_lead_past_a_floats_range_is_not_stated_as_a_ratio():
    """A runner-up at 1e-310 img/s: the winner's lead overflows, and the verdict says the winner is
    far ahead rather than `infx`, whether it is named alone or with a line it ties with."""
    crawl = {f"samples_per_sec{end}": 1e-310 for end in ("", "_low", "_high", "_p10", "_p90")}
    slow = line_row("pytorch", "gloo", 1.0, **crawl)
    alone = verdict(summary_of([line_row("pytorch", "ddp", 1000.0, 980.0, 1020.0), slow]))
    assert alone.startswith(
        "pytorch ddp is fastest on 2 GPUs: 1,000 img/s [980-1,020], far ahead of pytorch gloo (a lead past a float's range);"
    )
    tied = [line_row("pytorch", "ddp", 1000.0, 960.0, 1040.0), line_row("pytorch", "nccl", 990.0, 950.0, 1020.0)]
    sentence = verdict(summary_of([*tied, slow]))
    assert "; far ahead of the next, pytorch gloo (a lead past a float's range);" in sentence
    assert "inf" not in alone + sentence


def test_figures_within_the_noise_floor_tie_even_when_each_measured_no_spread():
    """15.90 s against 15.97 s, each one run: what no second compare would repeat is no ranking."""
    apart = 1 + NOISE_FLOOR
    rows = [line_row("pytorch", "ddp", 1000.0), line_row("chainer", "chainermn", 1000.0 / apart)]
    assert list(summary_of(rows).cells["vs_fastest"]) == ["1.00x", TIE]
    rows = [line_row("pytorch", "ddp", 1000.0), line_row("chainer", "chainermn", 1000.0 / apart**2.5)]
    assert list(summary_of(rows).cells["vs_fastest"]) == ["1.00x", "0.98x"]


@pytest.mark.parametrize(
    ("value", "low", "high", "shown", "range_text"),
    [
        (4279.3, 4236.0, 4322.0, "4,279", "4,236-4,322"),
        (1329.4, 1000.0, 1700.0, "1,330", "1,000-1,700"),
        (15.9, None, None, "15.90", "15.74-16.06"),
        (0.2517, 0.2, 0.3, "0.252", "0.200-0.300"),
    ],
)
def test_a_figure_shows_two_significant_digits_of_its_interval(value, low, high, shown, range_text):
    spread = Spread.of(value, low, high)
    assert (spread.text(), spread.range_text) == (shown, range_text)


def test_the_verdict_is_an_object_a_report_can_serialise():
    rows = [
        line_row("pytorch", "ddp", 1000.0, 960.0, 1040.0),
        line_row("pytorch", "ddp-unstaged", 990.0, 950.0, 1020.0),
        line_row("chainer", "chainermn", 600.0, 590.0, 610.0),
    ]
    judged = judge(summary_of(rows)).to_dict()
    assert json.loads(json.dumps(judged)) == judged
    assert judged["winner"] == {
        "name": "pytorch ddp", "framework": "pytorch", "strategy": "ddp", "devices": 2,
        "value": pytest.approx(1000.0), "low": 960.0, "high": 1040.0, "rounds": 3, "unit": "img/s", "detail": "",
    }  # fmt: skip
    assert [tie["name"] for tie in judged["ties"]] == ["pytorch ddp-unstaged"]
    assert judged["runner_up"]["name"] == "chainer chainermn" and judged["lead"] == pytest.approx(1000 / 600)
    assert judged["text"].startswith("pytorch ddp and pytorch ddp-unstaged tie")
    frame = results_frame(rows)
    answer = json.loads(json_text(compact_summary(frame, "densenet121 fp32"), frame))
    assert answer["verdict"] == judged["text"]
    assert {part: answer[part] for part in ("winner", "ties", "runner_up", "lead", "hints", "caveats")} == {
        part: judged[part] for part in ("winner", "ties", "runner_up", "lead", "hints", "caveats")
    }
    lines = answer["lines"]
    assert [line["tie"] for line in lines] == [False, True, False]
    assert lines[0]["samples_per_sec_low_2dev"] == 960.0 and lines[0]["rounds_2dev"] == 3


def test_each_run_of_the_answer_carries_its_rounds_and_the_steady_rates_interval():
    rows = [
        line_row("pytorch", "ddp", 1000.0, 960.0, 1040.0, round_samples_per_sec=[990.0, 1000.0, 1010.0]),
        line_row("chainer", "chainermn", 600.0, rounds=None, samples_per_sec_low=None, samples_per_sec_high=None),
    ]
    frame = results_frame(rows)
    ddp, chainer = json.loads(json_text(compact_summary(frame), frame))["rows"]
    assert ddp["rounds"] == 3 and ddp["round_samples_per_sec"] == [990.0, 1000.0, 1010.0]
    assert (ddp["interval"]["low"], ddp["interval"]["high"]) == (960.0, 1040.0)
    assert ddp["spread"]["of"] == "p10-p90 of single steps" and ddp["round_time_to_train_seconds"] == []
    assert chainer["rounds"] is None and chainer["interval"]["low"] is None and chainer["interval"]["high"] is None


def test_lines_that_differ_in_compiling_are_told_apart_and_an_eager_launch_bound_line_is_told_to_compile():
    jax = line_row("keras-jax", "jax-shard-map", 2400.0, compiler="xla (always)")
    torch = line_row("pytorch", "ddp", 1000.0, breakdown=IDLE_BOUND, bottleneck=bottleneck(IDLE_BOUND))
    torch.profiled.breakdown_clock = "device"
    summary = summary_of([jax, torch])
    assert list(summary.cells["step"]) == ["compiled", "eager"]
    sentence = verdict(summary)
    assert (
        "Compiled against eager: keras-jax jax-shard-map (xla (always)) compiled its step, pytorch ddp ran its "
        "eagerly, so the compare measures the compilers as much as the frameworks" in sentence
    )
    assert "pytorch ddp x2 is held back by launch overhead (idle 50% of the step) and ran eagerly: try --compile" in (
        sentence
    )
    compiled = line_row("pytorch", "ddp", 1000.0, compiler="torch.compile (default)", breakdown=IDLE_BOUND)
    compiled.profiled.bottleneck, compiled.profiled.breakdown_clock = "idle", "device"
    summary = summary_of([jax, compiled])
    assert set(summary.cells["step"]) == {""} and "--compile" not in verdict(summary)


def epochs_row(devices: int, auc: float, steps: int = 60, **figures) -> RunResult:
    config = RunConfig.flat(
        "pytorch", "ddp", "densenet121", devices, "cuda", 64, 20, dataset="chestxray:/data", epochs=2
    )  # fmt: skip
    stats = summarise_steps([0.05] * steps, [0.0] * steps, config.global_batch)
    values = {"time_to_train_seconds": 100.0, "compile_seconds": None, "eval_seconds": 5.0, **figures}
    return RunResult.flat(config, "ok", **vars(stats), test_metrics={"loss": 0.4, "auc": auc}, **values)


def test_a_job_too_short_to_time_is_said_with_what_to_change():
    """pytorch ddp x4 on 4,000 images for 2 epochs: 9 steady steps, 9.8 s of warm-up and 4.9 s of
    validation in 15.9 s."""
    short = epochs_row(4, 0.76, steps=20, time_to_train_seconds=15.9, eval_seconds=4.9)
    short = dataclasses.replace(short, timing=dataclasses.replace(short.timing, warmup_seconds=9.8, steady_steps=9))
    frame = results_frame([epochs_row(1, 0.76), short])
    warning = frame.set_index("devices").loc[4, "warning"]
    assert f"9 steady steps: too few for its rate to hold ({MIN_STEADY_STEPS} or more)" in warning
    assert "92% of its 15.9 s time to train is warm-up 9.8 s, validation 4.9 s, not steady training" in warning
    sentence = verdict(compact_summary(frame))
    assert "Its timing means little (pytorch ddp x4: 9 steady steps" in sentence
    assert sentence.endswith("): train more images or more epochs.")
    assert frame.set_index("devices").loc[1, "warning"] == ""


def test_a_model_that_has_not_learned_is_said_with_what_to_change():
    """Every 4-GPU row at test AUC 0.411, the same job on 1 GPU at 0.755."""
    frame = results_frame([epochs_row(1, 0.755), epochs_row(4, 0.411)])
    warning = frame.set_index("devices").loc[4, "warning"]
    assert "test AUC 0.411: no better than chance, the model has not learned" in warning
    assert "test auc 0.411, far below the 0.755 of the same job on 1 device(s)" in warning
    sentence = verdict(compact_summary(frame))
    assert "Its test metric means little (pytorch ddp x4: test AUC 0.411" in sentence
    assert "train more epochs, or stop at a level the model reaches with --target-metric." in sentence
    learned = results_frame([epochs_row(1, 0.755), epochs_row(4, 0.74)])
    assert list(learned["warning"]) == ["", ""] and "means little" not in verdict(compact_summary(learned))


def test_compile_time_is_stated_where_it_is_part_of_a_time_to_train():
    frame = results_frame([epochs_row(1, 0.76, compile_seconds=61.0, time_to_train_seconds=200.0)])
    assert verdict(compact_summary(frame)).startswith(
        "pytorch ddp trained 2 epochs fastest on 1 GPU: 200.0 s [198.0-202.0] (compile 61.0 s of it, test AUC 0.760)"
    )


def test_a_steady_rate_outside_its_steps_p10_p90_says_why():
    """A few steps 1.9 times the others: too slow to ignore, too short to be stalls."""
    steps = [0.1] * 10 + ([0.1] * 10 + [0.19]) * 3
    stats = summarise_steps(steps, [0.0] * len(steps), 32)
    assert stats.stall_steps == 0 and stats.samples_per_sec < stats.samples_per_sec_p10
    row = RunResult.flat(RunConfig.flat("pytorch", "ddp", "tiny", 1, "cpu", 32, len(steps)), "ok", **vars(stats))
    assert OUTSIDE_P10 in results_frame([row]).loc[0, "warning"]


def test_the_summary_table_carries_the_interval_rounds_and_stalls():
    row = line_row("pytorch", "ddp", 1000.0, 960.0, 1040.0, stall_steps=1, stall_seconds=2.76)
    table = display_table(results_frame([row]))
    assert table.loc[0, ["images/sec", "range", "rounds", "stalls"]].tolist() == [
        "1,000",
        "960-1,040",
        "3",
        "1 / 2.8 s",
    ]
    assert isinstance(pd.DataFrame(table).to_markdown(), str)


def test_a_row_whose_p10_p90_has_no_value_is_not_said_to_lie_outside_it():
    row = line_row("pytorch", "ddp", 1000.0)
    row.timing.samples_per_sec_p10 = row.timing.samples_per_sec_p90 = None
    assert results_frame([row]).loc[0, "warning"] == ""


def test_the_verdict_states_the_speed_up_its_rows_hold_against_the_smallest_count():
    """The winner's speed-up is its row's own (`records.scaling`, as the results file holds it),
    beside the efficiency from the same row; a winner without a rate at the smallest count has no
    scaling stated, rather than one against a count it never ran on."""
    held = [
        line_row("pytorch", "ddp", 1000.0, devices=1, speedup=1.0, scaling_efficiency_fraction=1.0),
        line_row("pytorch", "ddp", 1800.0, devices=2, speedup=1.9, scaling_efficiency_fraction=0.95),
    ]
    assert "; 1.90x its 1-GPU throughput (95% scaling efficiency);" in verdict(summary_of(held))
    alone = [
        line_row("pytorch", "ddp", 1800.0, devices=2),
        line_row("chainer", "chainermn", 90.0, devices=1),
        line_row("chainer", "chainermn", 170.0, devices=2),
    ]
    sentence = verdict(summary_of(alone))
    assert sentence.startswith("pytorch ddp is fastest on 2 GPUs") and "throughput" not in sentence


def test_a_scaling_its_own_warning_disowns_is_not_stated_and_lines_without_a_figure_are_named():
    """A speed-up past the device ratio is said as a warning, not as the winner's scaling; a winner
    is named with the lines that have no figure and how their runs ended."""
    rows = [
        line_row("pytorch", "ddp", 100.0, devices=1),
        line_row("pytorch", "ddp", 2246.0, devices=2),
        line_row("chainer", "chainermn", 90.0, devices=1),
        line_row("chainer", "chainermn", 170.0, devices=2),
    ]
    config = RunConfig.flat("keras-tf", "mirrored", "densenet121", 1, "cuda", 32, 60)
    rows.append(RunResult.flat(config, "not-installed", error="keras-tf lacks tensorflow"))
    for devices in (1, 2):
        config = RunConfig.flat("keras-torch", "ddp", "densenet121", devices, "cuda", 32, 60)
        rows.append(RunResult.flat(config, "failed", error="boom"))
    summary = summary_of(rows)
    sentence = verdict(summary)
    assert "exceeds the device ratio: the runs were not measured alike" in " ".join(summary.notes)
    assert "scaling efficiency" not in sentence and "1123%" not in sentence
    assert "its scaling is not stated: its 1- and 2-GPU runs were not measured alike" in sentence
    assert "2 of the 4 lines have no figure: keras-tf mirrored (not-installed), keras-torch ddp (failed)." in sentence
    assert judge(summary).to_dict()["unmeasured"] == ["keras-tf mirrored (not-installed)", "keras-torch ddp (failed)"]
    assert "scaling efficiency" in verdict(summary_of(rows[2:4]))  # a scaling within the device ratio is stated
