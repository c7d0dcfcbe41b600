"""What a row and a report say without being read twice: every ok CPU row names its bottleneck
and the clock it came from in results.jsonl; the report's "Every run" table keeps the columns a
reader compares and leaves the rest to each run's details; the throughput chart says what its bar
and whiskers are."""

from __future__ import annotations

import re

import pandas as pd
from conftest import append_result, mgbench, tiny_job
from test_reports import BASE, fixture_folder, ok_result

from mgbench.measure.breakdown import CATEGORIES, host_bottleneck
from mgbench.measure.timing import HOST_PHASES
from mgbench.records.breakdown_record import HOST_CLOCK, attach_host_bottleneck
from mgbench.reports.compare_charts import THROUGHPUT_CAPTION, WHAT_BARS_SHOW, WHAT_WHISKERS_SHOW
from mgbench.reports.folder_data import load_run_folder
from mgbench.reports.html import COMPARED, DETAILS, write_report
from mgbench.reports.summary import TABLE_COLUMNS, rate_spread

INPUT_BOUND = {"input_wait": 0.31, "step": 0.66, "synchronize": 0.0, "loss_read": 0.03}
STEP_BOUND = {"input_wait": 0.02, "step": 0.95, "synchronize": 0.0, "loss_read": 0.03}


def test_a_cpu_compare_writes_each_ok_rows_bottleneck_and_its_clock_into_results_jsonl(tmp_path):
    """CPU devices take no profile by default: the row itself names its bottleneck from its host
    timing, so pandas reading results.jsonl sees what the report's tables say."""
    out = tmp_path / "compare"
    done = mgbench(
        "compare", "--frameworks", "fake", "--strategies", "steady", "--gpus", "2", *tiny_job(12), "--out", str(out)
    )
    assert done.returncode == 0, done.stderr
    rows = pd.read_json(out / "results.jsonl", lines=True)
    assert len(rows) == 2 and (rows["status"] == "ok").all() and (rows["device_kind"] == "cpu").all()
    assert rows["breakdown"].isna().all()
    assert (rows["breakdown_clock"] == HOST_CLOCK).all()
    assert list(rows["bottleneck"]) == [host_bottleneck(shares) for shares in rows["host_breakdown"]]
    assert rows["bottleneck"].isin(HOST_PHASES).all()


def test_the_host_clock_names_a_bottleneck_wherever_no_profile_does():
    cpu = BASE.with_changes(device_kind="cpu")
    unprofiled = ok_result(cpu, 0.2)
    unprofiled.host_breakdown = INPUT_BOUND
    attach_host_bottleneck(unprofiled)
    assert (unprofiled.profiled.bottleneck, unprofiled.profiled.breakdown_clock) == ("input_wait", HOST_CLOCK)
    step_bound = ok_result(cpu, 0.2)
    step_bound.host_breakdown = STEP_BOUND
    attach_host_bottleneck(step_bound)
    assert step_bound.profiled.bottleneck == "step"

    profiled = ok_result(cpu, 0.2)
    profiled.host_breakdown = INPUT_BOUND
    profiled.profiled.breakdown = dict(zip(CATEGORIES, (0.05, 0.0, 0.55, 0.0, 0.40), strict=True))
    profiled.profiled.bottleneck, profiled.profiled.breakdown_clock = "idle", "cpu"
    gpu = ok_result(BASE, 0.2)  # unprofiled on a GPU (an --epochs run): its host waited for input
    gpu.host_breakdown = INPUT_BOUND
    nulled = ok_result(cpu, 0.2)  # a share written as null: no split rather than half of one
    nulled.host_breakdown = {**INPUT_BOUND, "synchronize": None}
    for row, expected in ((profiled, ("idle", "cpu")), (gpu, ("input_wait", HOST_CLOCK)), (nulled, (None, None))):
        attach_host_bottleneck(row)
        assert (row.profiled.bottleneck, row.profiled.breakdown_clock) == expected


def test_every_run_keeps_the_compared_columns_and_links_each_row_to_its_details(tmp_path):
    """The folded figures (warm-up, stalls, rounds, input wait, start-up, compile, peak memory,
    all-reduce, the warning) are in each run's details, folded behind its name, which its row links
    to, saying so where it has a warning; the steady rate's range sits beside it in the table; what
    every row shares (one framework, one kind of device) is said once above the table instead of
    in a column."""
    folder, run_ids = fixture_folder(tmp_path)
    text = write_report(folder).read_text()
    table = re.search(r'<table class="summary">(.*?)</table>', text).group(1)
    headers = re.findall(r"<th>([^<]*)</th>", table)
    shared = ("framework", "device_kind")
    assert headers == [TABLE_COLUMNS[key] for key in COMPARED if key not in shared] + [DETAILS]
    assert '<p class="all-runs">Every row: framework pytorch; kind cuda</p><table class="summary">' in text
    for folded in ("warm-up", "input wait %", "start-up s", "peak mem GiB", "warning"):
        assert folded not in headers
    links = re.findall(r'<tr id="row-([^"]*)".*?<a href="#([^"]*)">([^<]*)</a></td></tr>', table)
    assert [(row, target) for row, target, _ in links] == [(run_id, f"run-{run_id}") for run_id in run_ids]
    sections = dict(re.findall(r'<details class="run" id="(run-[^"]*)">(.*?)</details>', text, re.DOTALL))
    assert re.search(r"<summary>pytorch ddp x1: ok</summary>", sections[f"run-{run_ids[0]}"])
    first = sections[f"run-{run_ids[0]}"]
    assert "<td>start-up s</td><td>9.5</td>" in first and "<td>peak mem GiB</td><td>40.00</td>" in first
    assert "<td>warm-up</td><td>3 st / " in first and "<td>rounds</td><td>1</td>" in first
    shown = rate_spread(load_run_folder(folder).frame.iloc[0])
    assert f'<td class="num" data-label="images/sec">{shown.text()}</td>' in table
    assert f'<td class="num" data-label="range">{shown.range_text}</td>' in table
    assert "start-up s" not in sections[f"run-{run_ids[3]}"]  # failed: no figures to fold


def test_a_rows_warning_shows_in_its_link_and_in_its_details(tmp_path):
    folder = tmp_path / "warned"
    result = ok_result(BASE, 0.2)
    result.warnings = ["input_wait_fraction: no value (the adapter timed no wait)"]
    append_result(folder / "results.jsonl", result)
    append_result(folder / "results.jsonl", ok_result(BASE.with_changes(strategy="dp"), 0.3))
    text = write_report(folder).read_text()
    links = re.findall(r'<a href="#run-([^"]*)">([^<]*)</a>', text)
    assert links == [(result.run_id, "details (warning)"), ("pytorch-dp-1cuda", "details")]
    assert "<td>warning</td><td>input_wait_fraction: no value (the adapter timed no wait)</td>" in text


def throughput_figure(tmp_path, monkeypatch, epochs: list[int | None]):
    """The throughput chart's figure as drawn for two rows whose steady window's rate (900, 2100)
    lies under the first's steps' p10 and inside the second's p10-p90."""
    from mgbench.reports import compare_charts

    ok = pd.DataFrame(
        {
            "framework": ["pytorch", "pytorch"],
            "strategy": ["ddp", "ddp"],
            "model": ["resnet50", "resnet50"],
            "precision": ["bf16", "bf16"],
            "data_format": ["channels_last", "channels_last"],
            "devices": [1, 2],
            "samples_per_sec": [900.0, 2100.0],
            "samples_per_sec_p10": [1000.0, 1900.0],
            "samples_per_sec_p90": [1100.0, 2200.0],
            "epochs": epochs,
        }
    )
    drawn = []
    monkeypatch.setattr(compare_charts, "save", lambda figure, path: drawn.append(figure) or path)
    compare_charts.throughput_chart(ok, tmp_path / "throughput.png")
    return drawn[0]


def test_the_throughput_chart_draws_each_p10_p90_where_it_lies_and_says_what_bar_and_whiskers_are(
    tmp_path, monkeypatch
):
    figure = throughput_figure(tmp_path, monkeypatch, [None, None])
    (axes,) = figure.axes
    whiskers = sorted((segment[0][1], segment[1][1]) for line in axes.collections for segment in line.get_segments())
    assert whiskers == [(1000.0, 1100.0), (1900.0, 2200.0)]  # the first wholly above its bar of 900
    caption = figure.get_supxlabel()
    assert caption == THROUGHPUT_CAPTION and WHAT_BARS_SHOW in caption and WHAT_WHISKERS_SHOW in caption
    assert "steady rate" in caption and "median" not in caption


def test_the_step_chart_marks_stalls_and_draws_the_steady_rate_by_that_name(tmp_path, monkeypatch):
    from mgbench.measure.timing import summarise_steps
    from mgbench.reports import run_charts

    steps = [1.0, 0.4] + [0.1] * 18 + [2.0] + [0.1] * 19
    stats = summarise_steps(steps, [0.0] * len(steps), 8)
    row = pd.Series({**vars(stats), "step_seconds": steps, "global_batch": 8})
    drawn = []
    monkeypatch.setattr(run_charts, "save", lambda figure, path: drawn.append(figure) or path)
    monkeypatch.setattr(run_charts, "run_title", lambda row: "a run")
    run_charts.step_throughput_chart(row, tmp_path / "steps.png")
    (axes,) = drawn[0].axes
    labels = [text.get_text() for text in drawn[0].legends[0].get_texts()]  # outside the data
    assert f"steady rate {stats.samples_per_sec:.1f}" in labels
    assert "stalls, 1 step (left out of the steady rate)" in labels
    (marked,) = axes.collections
    assert marked.get_offsets().tolist() == [[21.0, 4.0]]  # step 21, 8 images in 2 s
