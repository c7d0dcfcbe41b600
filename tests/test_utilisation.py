"""Utilisation side by side: each run's phases from its own clocks (epochs runs included), its
devices' utilisation over the steady window in results.jsonl, summary.csv and summary.md, and one
chart that puts every run on one time axis."""

from __future__ import annotations

import pandas as pd
import pytest
from conftest import mgbench, read_rows, tiny_job

from mgbench.measure.phases import (
    COMPILE,
    EPOCH_START,
    EVALUATION,
    PROFILE,
    STALL,
    STARTUP,
    STEADY,
    WARMUP,
    row_window,
    run_phases,
    steady_spans,
)
from mgbench.measure.timing import STALL_FACTOR, summarise_steps
from mgbench.records.utilisation import SOURCES, utilisation_figures


def named(phases) -> list[tuple[str, float, float]]:
    return [(phase.name, pytest.approx(phase.start), pytest.approx(phase.end)) for phase in phases]


def steps_row(**figures) -> dict:
    """A steps row's clocks: 2 s start-up, 3 s compile, two warm-up steps of 1 s, steady steps of
    0.5 s with one of 2 s (a stall, which the row counted) in them, a 1.5 s profile and a 0.5 s
    evaluation."""
    steps = [1.0, 1.0, 0.5, 0.5, 2.0, 0.5, 0.5]
    row = {"status": "ok", "startup_seconds": 2.0, "compile_seconds": 3.0, "step_seconds": steps}
    return {**row, "warmup_steps": 2, "stall_steps": 1, "profile_seconds": 1.5, "eval_seconds": 0.5, **figures}


def test_a_steps_run_is_start_up_compile_warm_up_steady_with_its_stall_then_profile_and_evaluation():
    assert named(run_phases(steps_row())) == [
        (STARTUP, 0.0, 2.0),
        (COMPILE, 2.0, 5.0),
        (WARMUP, 5.0, 7.0),
        (STEADY, 7.0, 8.0),
        (STALL, 8.0, 10.0),
        (STEADY, 10.0, 11.0),
        (PROFILE, 11.0, 12.5),
        (EVALUATION, 12.5, 13.0),
    ]
    not_a_stall = steps_row(step_seconds=[1.0, 1.0, 0.5, 0.5, 0.5 * STALL_FACTOR, 0.5, 0.5])
    assert [phase.name for phase in run_phases(not_a_stall)].count(STALL) == 0
    assert run_phases({**steps_row(), "status": "failed"}) == []


def stall_seconds(phases) -> float:
    return sum(phase.seconds for phase in phases if phase.name == STALL)


def test_a_stall_is_what_the_row_counted_by_timings_one_rule():
    """The phases find the stalls `timing` counted in the row, and no others: two steps of 1.2 s
    (over twice the 0.5 s median, so stalls) among 38 steady ones; a step of 1.2 s in every four
    (too frequent to be stalls: how the job runs); a row written before stalls were counted."""
    rare = [2.0, 1.5] + [0.5] * 18 + [1.2] + [0.5] * 18 + [1.2] + [0.5] * 2
    stats = summarise_steps(rare, [0.0] * len(rare), 32)
    row = {"status": "ok", "startup_seconds": 1.0, "step_seconds": rare, **stats.__dict__}
    assert stats.stall_steps == 2 and row_window(row).stalls == (20, 39)
    assert stall_seconds(run_phases(row)) == pytest.approx(stats.stall_seconds)
    warm = sum(phase.seconds for phase in run_phases(row) if phase.name == WARMUP)
    steady = sum(phase.seconds for phase in run_phases(row) if phase.name == STEADY)
    assert (warm, steady) == (pytest.approx(stats.warmup_seconds), pytest.approx(stats.window_seconds))
    frequent = [2.0, 1.5] + [0.5, 0.5, 0.5, 1.2] * 10
    stats = summarise_steps(frequent, [0.0] * len(frequent), 32)
    row = {"status": "ok", "startup_seconds": 1.0, "step_seconds": frequent, **stats.__dict__}
    assert stats.stall_steps == 0 and stall_seconds(run_phases(row)) == 0
    before_stalls = {**row, "step_seconds": rare, "stall_steps": None}
    assert row_window(before_stalls).stalls == () and stall_seconds(run_phases(before_stalls)) == 0


def test_an_epochs_run_shades_each_epochs_opening_its_steps_and_its_validation():
    """Two epochs of 4 steps, validation 1 s each; the run compiled, so its first step is the
    compile step (1 s), out of the timed series, whose steps take 0.5 s. The first epoch's training
    took 6 s of wall time, 3.5 s more than its compile step and 3 timed steps - its loader
    starting, its epoch start (not a step, so never a stall); the second 2.1 s, its opening 0.1 s."""
    epochs = [
        {"epoch": 1, "elapsed_seconds": 7.0, "val_seconds": 1.0},
        {"epoch": 2, "elapsed_seconds": 10.1, "val_seconds": 1.0},
    ]
    row = {"status": "ok", "startup_seconds": 4.0, "compile_seconds": 1.0, "step_seconds": [0.5] * 7}
    phases = run_phases({**row, "warmup_steps": 1, "epoch_metrics": epochs, "eval_seconds": 2.0})
    assert named(phases) == [
        (STARTUP, 0.0, 4.0),
        (EPOCH_START, 4.0, 7.5),
        (COMPILE, 7.5, 8.5),
        (WARMUP, 8.5, 9.0),
        (STEADY, 9.0, 10.0),
        (EVALUATION, 10.0, 11.0),
        (EPOCH_START, 11.0, 11.1),
        (STEADY, 11.1, 13.1),
        (EVALUATION, 13.1, 14.1),
    ]
    assert [edge for span in steady_spans(phases) for edge in (span.start, span.end)] == pytest.approx(
        [9.0, 10.0, 11.1, 13.1]
    )
    eager = run_phases(
        {**row, "compile_seconds": None, "step_seconds": [0.5] * 8, "warmup_steps": 0, "epoch_metrics": epochs}
    )
    assert [phase.name for phase in eager] == [STARTUP, *[EPOCH_START, STEADY, EVALUATION] * 2]
    stalled = {**row, "step_seconds": [0.5, 0.5, 0.5, 1.5, 0.5, 0.5, 0.5], "stall_steps": 1, "epoch_metrics": epochs}
    assert [phase.name for phase in run_phases(stalled)].count(STALL) == 1  # the row's stall, in its epoch


def trace(samples: list[tuple[float, int, float, float]], kind: str = "gpu") -> pd.DataFrame:
    """(seconds, device, utilisation %, memory used MiB) samples."""
    return pd.DataFrame(
        [
            {"seconds": t, "kind": kind, "device": device if kind == "gpu" else "cpu", "utilization_pct": use}
            | {"memory_used_mib": memory, "memory_total_mib": 80_000, "sm_clock_mhz": 1980, "mem_clock_mhz": 2619}
            for t, device, use, memory in samples
        ]
    )


def test_figures_are_of_the_steady_window_only_per_device_and_pooled():
    """GPU 0 works alone while compiling (100%, 70 GiB); over the steady window GPU 0 reads 90-98%
    and GPU 1 60-68%, and a stall's samples drop to 0: neither the compile nor the stall counts."""
    phases = run_phases(steps_row(step_seconds=[1.0, 1.0, *[0.5] * 6, 2.0, *[0.5] * 6]))
    # compile 2-5 s, warm-up 5-7 s, steady 7-10 s, stall 10-12 s, steady 12-15 s
    compile = [(t, 0, 100.0, 70_000) for t in (2.5, 3.0, 4.0)] + [(t, 1, 0.0, 500) for t in (2.5, 3.0, 4.0)]
    stall = [(11.0, 0, 0.0, 1_000), (11.0, 1, 0.0, 1_000)]
    steady = [(t, 0, 90.0 + 2 * i, 20_000 + i) for i, t in enumerate((8.5, 9.5, 13.5, 14.0, 15.0))]
    steady += [(t, 1, 60.0 + 2 * i, 10_000) for i, t in enumerate((8.5, 9.5, 13.5, 14.0, 15.0))]
    figures = utilisation_figures(trace(compile + stall + steady), phases)
    gpu0, gpu1 = figures["device_utilisation"]
    assert (gpu0["device"], gpu0["utilisation_pct"], gpu0["memory_used_mib"]) == ("GPU 0", 94.0, 20_004)
    assert (gpu1["device"], gpu1["utilisation_pct"], gpu1["memory_used_mib"]) == ("GPU 1", 64.0, 10_000)
    assert gpu0["utilisation_p10_pct"] == pytest.approx(90.8) and gpu0["utilisation_p90_pct"] == pytest.approx(97.2)
    pooled = [90.0, 92.0, 94.0, 96.0, 98.0, 60.0, 62.0, 64.0, 66.0, 68.0]
    assert figures["utilisation_pct"] == pytest.approx(pd.Series(pooled).median())
    assert figures["utilisation_p10_pct"] == pytest.approx(pd.Series(pooled).quantile(0.1))
    assert figures["memory_used_mib"] == 20_004 and figures["utilisation_source"] == SOURCES["gpu"]
    assert utilisation_figures(trace(compile + stall), phases) == {}


def test_a_gpu_reading_counts_only_once_the_period_it_tells_of_lies_in_the_steady_window():
    """NVML's reading tells of up to the second before it: the readings of a steady span's first
    second still tell of the warm-up (here idle) and are left out; a span no longer than that
    second gives no reading at all, where CPU devices' readings, which tell of 0.1 s, still count."""
    phases = run_phases(steps_row(step_seconds=[1.0, 1.0, *[0.5] * 6]))  # steady 7-10 s
    readings = [(7.2, 0, 0.0, 500), (7.9, 0, 10.0, 500), (8.5, 0, 95.0, 500), (9.5, 0, 97.0, 500)]
    assert utilisation_figures(trace(readings), phases)["utilisation_pct"] == 96.0
    short = run_phases(steps_row(step_seconds=[1.0, 1.0, 0.5, 0.5]))  # steady 7-8 s
    assert utilisation_figures(trace([(7.5, 0, 0.0, 500), (8.0, 0, 90.0, 500)]), short) == {}
    assert (
        utilisation_figures(trace([(7.5, 0, 40.0, 500), (8.0, 0, 60.0, 500)], kind="cpu"), short)["utilisation_pct"]
        == 50.0
    )


def test_on_cpu_devices_the_figure_is_the_hosts_and_says_so():
    samples = trace([(7.5, 0, 40.0, 3_000), (10.5, 0, 60.0, 3_100)], kind="cpu")
    figures = utilisation_figures(samples, run_phases(steps_row()))
    assert figures["utilisation_source"] == "host CPU (psutil, every process on the host)"
    assert [device["device"] for device in figures["device_utilisation"]] == ["host CPU"]
    assert figures["utilisation_pct"] == 50.0


def test_a_cpu_compare_gives_every_ok_row_its_utilisation_in_results_summary_csv_and_md(tmp_path):
    """40 steps of the fake's 20 ms: the monitor's 10 Hz samples land in every row's steady window."""
    out = tmp_path / "compare"
    done = mgbench(
        "compare", "--frameworks", "fake", "--strategies", "steady", "--gpus", "2", *tiny_job(40), "--out", str(out)
    )
    assert done.returncode == 0, done.stderr
    rows = read_rows(out)
    assert (rows["status"] == "ok").all() and rows["utilisation_pct"].between(0, 100).all()
    assert (rows["utilisation_source"] == SOURCES["cpu"]).all()
    assert (rows["utilisation_p10_pct"] <= rows["utilisation_pct"]).all()
    assert (rows["utilisation_pct"] <= rows["utilisation_p90_pct"]).all()
    assert all(len(devices) == 1 and devices[0]["device"] == "host CPU" for devices in rows["device_utilisation"])
    summary = pd.read_csv(out / "summary.csv")
    assert summary["utilisation_pct"].tolist() == pytest.approx(rows["utilisation_pct"].tolist())
    assert "memory_used_mib" in summary and "device_utilisation" not in summary
    markdown = (out / "summary.md").read_text()
    assert "host CPU util % (p10-p90)" in markdown
    for _, row in rows.iterrows():
        assert f"{row['utilisation_pct']:.0f} ({row['utilisation_p10_pct']:.0f}-{row['utilisation_p90_pct']:.0f})" in (
            markdown
        )


def test_one_chart_puts_every_runs_utilisation_on_one_time_axis_with_its_phases(tmp_path, monkeypatch):
    """The fixture's GPU runs (two trained in epochs): a panel each on one shared time axis, a
    line per GPU, every phase of the run shaded where its clocks put it, its steady median named."""
    from test_reports import fixture_folder

    from mgbench.reports import utilisation_charts
    from mgbench.reports.cells import run_label
    from mgbench.reports.folder_data import load_run_folder

    folder, _ = fixture_folder(tmp_path)
    data = load_run_folder(folder)
    ok = data.frame[data.frame["status"] == "ok"]
    drawn = []
    monkeypatch.setattr(utilisation_charts, "save", lambda figure, path: drawn.append(figure) or path)
    traces = {run_id: data.trace(run_id) for run_id in ok["run_id"]}
    utilisation_charts.every_run_utilisation_chart(ok, traces, tmp_path / "utilisation-all.png")
    panels = drawn[0].axes
    assert len(panels) == len(ok) == 3
    assert all(panels[0].get_shared_x_axes().joined(panels[0], panel) for panel in panels)
    for panel, (_, row) in zip(panels, ok.iterrows()):
        assert len(panel.lines) == row["devices"]
        edges = [edge for patch in panel.patches for edge in (patch.get_bbox().x0, patch.get_bbox().x1)]
        assert edges == pytest.approx([edge for phase in run_phases(row) for edge in (phase.start, phase.end)])
        figure = row["utilisation_pct"]
        named = f"steady median {figure:.0f}%" if pd.notna(figure) else "no steady sample"
        assert panel.get_ylabel() == f"{run_label(row)}\n{named}"
    assert ok["utilisation_pct"].notna().any()  # a window shorter than NVML's period gives none
    assert any(isinstance(row, list) and row for row in ok["epoch_metrics"])
    legend = [text.get_text() for text in drawn[0].legends[0].get_texts()]
    assert legend == [STARTUP, WARMUP, STEADY, EVALUATION, "GPU 0", "GPU 1", "GPU 2", "GPU 3"]
