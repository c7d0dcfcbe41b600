"""Reports: charts from a fixture run folder, the self-contained HTML, Chromium rendering, partial folders."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import SCRIPTS, append_result, benchmark_script, mgbench, one_line_error, tiny_job
from PIL import Image

from mgbench.core.config import RunConfig
from mgbench.measure.breakdown import CATEGORIES, bottleneck
from mgbench.measure.timing import summarise_steps
from mgbench.records.results import RunResult
from mgbench.records.runfolder import TRACE_COLUMNS
from mgbench.reports.charts import write_charts
from mgbench.reports.compact import print_summary
from mgbench.reports.figures import DPI, PIXEL_SIZE
from mgbench.reports.folder_data import load_run_folder
from mgbench.reports.html import write_report
from mgbench.reports.readings import (
    COLORS,
    CPU_READINGS,
    HOST_READINGS,
    LABELS,
    NOT_PROFILED,
    READINGS,
    limits_details,
    reading,
)
from mgbench.reports.scaling_loss import scaling_loss, scaling_losses
from mgbench.reports.summary import display_table, results_frame, write_summary
from mgbench.reports.utilisation_charts import FRAME_INCHES, PANEL_INCHES, SUMMARY_WIDTH_INCHES

ENVIRONMENT = {
    "mgbench": "0.1.0",
    "python": "3.11.9",
    "platform": "Linux-6.8-x86_64",
    "hostname": "gpu-box-7",
    "cpu_count": 64,
    "memory_total_gib": 503.5,
    "driver": "550.54.15",
    "cuda_driver": 12040,
    "gpus": [
        {
            "index": i,
            "name": "NVIDIA H100 80GB HBM3",
            "memory_total_mib": 81559,
            "sm_clock_mhz": 1980,
            "sm_clock_max_mhz": 1980,
            "mem_clock_mhz": 2619,
            "mem_clock_max_mhz": 2619,
        }
        for i in range(4)
    ],
}
BASE = RunConfig.flat(
    framework="pytorch",
    strategy="ddp",
    model="densenet121",
    devices=1,
    device_kind="cuda",
    batch_per_device=32,
    steps=40,
    precision="bf16",
)


def ok_result(config: RunConfig, step_seconds: float, epochs: list[dict] | None = None) -> RunResult:
    """A successful row whose figures are derived from a step series the way the driver derives them."""
    rng = np.random.default_rng(config.devices)
    steps = [step_seconds * 8] * 3 + list(step_seconds * (1 + 0.01 * rng.standard_normal(config.job.steps - 3)))
    waits = [s * 0.1 for s in steps]
    stats = summarise_steps(steps, waits, config.global_batch)
    return RunResult.flat(
        config,
        "ok",
        command="torchrun ...",
        interpreter="/env/bin/python",
        started_at="2025-01-01T00:00:00",
        wall_seconds=60.0,
        environment=ENVIRONMENT,
        framework_versions={"torch": "2.5.1", "cuda": "12.4"},
        device_names=[f"cuda:{i}" for i in range(config.devices)],
        parameters=6968206,
        startup_seconds=9.5,
        **dataclasses.asdict(stats),
        epoch_metrics=epochs or [],
        peak_memory_bytes=40 * 2**30,
        step_seconds=steps,
        input_wait_seconds=waits,
        losses=[1.0] * config.job.steps,
    )


def epochs(offset: float) -> list[dict]:
    return [
        {
            "epoch": e,
            "train_loss": 0.3 - 0.03 * e + offset,
            "val_loss": 0.32 - 0.02 * e + offset,
            "val_auc": 0.7 + 0.03 * e - offset,
            "train_seconds": 100.0,
            "val_seconds": 10.0,
        }
        for e in range(1, 6)
    ]


def write_trace(folder: Path, run_id: str, gpus: int) -> None:
    path = folder / "traces" / f"{run_id}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(TRACE_COLUMNS)
        for tick in range(50):
            for gpu in range(gpus):
                writer.writerow(
                    [tick / 2, "gpu", gpu, min(100, 2 * tick + 10 * gpu), 1000 + 500 * tick, 81559, 1980, 2619]
                )


BREAKDOWNS = {
    1: dict(zip(CATEGORIES, (0.02, 0.01, 0.92, 0.0, 0.05), strict=True)),
    2: dict(zip(CATEGORIES, (0.02, 0.01, 0.80, 0.12, 0.05), strict=True)),
    4: dict(zip(CATEGORIES, (0.02, 0.01, 0.60, 0.12, 0.25), strict=True)),
}
"""Per device count: the profiled step's shares (sum 1); 2 GPUs lose to communication, 4 to idle."""


def fixture_folder(root: Path) -> tuple[Path, list[str]]:
    """pytorch ddp on 1, 2 and 4 GPUs (epoch metrics, one with communication measured, each
    with a breakdown), dp crashed on 2."""
    folder = root / "run"
    results = folder / "results.jsonl"
    run_ids = []
    for devices, step in ((1, 0.20), (2, 0.21), (4, 0.23)):
        config = BASE.with_changes(devices=devices)
        result = ok_result(config, step, epochs(0.01 * devices) if devices in (1, 4) else None)
        result.profiled.breakdown, result.profiled.breakdown_clock = BREAKDOWNS[devices], "device"
        result.profiled.bottleneck = bottleneck(BREAKDOWNS[devices])
        result.profiled.profile = {"steps": 3, "window_slowdown": 1 + devices / 8}
        if devices == 4:
            record = {**result.to_record(), "communication_fraction": 0.15}
            with results.open("a") as handle:
                handle.write(json.dumps(record) + "\n")
        else:
            append_result(results, result)
        write_trace(folder, config.run_id, devices)
        run_ids.append(config.run_id)
    crashed = BASE.with_changes(strategy="dp", devices=2)
    append_result(results, RunResult.flat(crashed, "failed", error="exit code 1\nRuntimeError: NCCL <boom> & co"))
    run_ids.append(crashed.run_id)
    return folder, run_ids


class DocumentScan(HTMLParser):
    """Image sources, external references and the summary rows of a report page."""

    def __init__(self) -> None:
        super().__init__()
        self.images: list[str] = []
        self.external: list[str] = []
        self.row_ids: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "img":
            self.images.append(attributes.get("src") or "")
        if tag in ("link", "script") or (tag != "img" and attributes.get("src")):
            self.external.append(tag)
        if tag == "tr" and attributes.get("data-run-id"):
            self.row_ids.append(attributes["data-run-id"])


def scan(text: str) -> DocumentScan:
    parser = DocumentScan()
    parser.feed(text)
    return parser


def test_charts_are_pngs_of_the_expected_size(tmp_path):
    folder, run_ids = fixture_folder(tmp_path)
    charts = write_charts(load_run_folder(folder))
    names = {chart.path.name for chart in charts.compare}
    assert names == {"throughput.png", "scaling.png", "scaling-loss.png", "breakdown.png", "epochs.png"}
    ok_ids = run_ids[:3]
    for run_id in ok_ids:
        assert {c.path.name for c in charts.runs[run_id]} == {f"utilisation-{run_id}.png", f"steps-{run_id}.png"}
    failed = run_ids[3]
    assert charts.runs[failed] == [] and charts.notes[failed] == ["no utilisation trace in this folder"]
    assert [chart.path.name for chart in charts.side_by_side] == ["utilisation-all.png", "throughput-utilisation.png"]
    written = sorted((folder / "charts").glob("*.png"))
    assert len(written) == 7 + 2 * len(ok_ids)
    sizes = {
        "utilisation-all.png": (
            round(DPI * SUMMARY_WIDTH_INCHES),
            round(DPI * (FRAME_INCHES + PANEL_INCHES * len(ok_ids))),
        ),
        "throughput-utilisation.png": (round(DPI * SUMMARY_WIDTH_INCHES), PIXEL_SIZE[1]),
    }
    for path in written:
        with Image.open(path) as image:
            size = sizes.get(path.name, PIXEL_SIZE)
            assert image.format == "PNG" and image.size == size, path.name
            assert np.unique(np.asarray(image.convert("L"))).size > 20, f"{path.name} looks blank"


def test_folder_keeps_extra_fields_and_derives_scaling(tmp_path):
    folder, run_ids = fixture_folder(tmp_path)
    frame = load_run_folder(folder).frame.set_index("run_id")
    assert frame.loc[run_ids[2], "communication_fraction"] == 0.15
    assert np.isnan(frame.loc[run_ids[0], "communication_fraction"])
    one, four = frame.loc[run_ids[0]], frame.loc[run_ids[2]]
    assert four["speedup"] == pytest.approx(four["samples_per_sec"] / one["samples_per_sec"])
    assert four["scaling_efficiency_fraction"] == pytest.approx(four["speedup"] / 4)


def test_report_is_self_contained_with_environment_configs_and_errors(tmp_path):
    folder, run_ids = fixture_folder(tmp_path)
    text = write_report(folder).read_text()
    page = scan(text)
    assert page.row_ids == run_ids
    assert page.external == []
    assert len(page.images) == 7 + 2 * 3
    assert all(src.startswith("data:image/png;base64,") for src in page.images)
    assert text.index("charts/scaling.png") < text.index("charts/scaling-loss.png") < text.index("charts/breakdown.png")
    assert "communication 12%: gradient exchange that compute does not hide" in text
    assert "idle 25%: nothing runs on the device" in text and "compute 92%" in text
    assert all(slowdown in text for slowdown in ("1.12x", "1.25x", "1.50x"))  # the profiler's, per run
    for expected in ("NVIDIA H100 80GB HBM3", "550.54.15", "1980", "torch 2.5.1", "bf16", "densenet121"):
        assert expected in text
    assert "RuntimeError: NCCL &lt;boom&gt; &amp; co" in text and "<boom>" not in text
    assert text.count('<details class="run"') == len(run_ids)


def chromium_or_skip() -> str:
    binary = shutil.which("chromium")
    if binary is None:
        pytest.skip("Debian chromium is not installed (make test installs it when run as root)")
    return binary


SCREENSHOTS = benchmark_script("report_screenshots", SCRIPTS)
"""scripts/report_screenshots.py: Chromium run as the docs' screenshots are taken."""
chromium = SCREENSHOTS.chromium


def test_report_renders_in_headless_chromium_with_every_run_row(tmp_path):
    binary = chromium_or_skip()
    folder, run_ids = fixture_folder(tmp_path)
    report = write_report(folder)
    dom = chromium(binary, "--dump-dom", report.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    rendered = scan(dom.stdout)
    assert rendered.row_ids == run_ids
    assert len(rendered.images) == 7 + 2 * 3
    screenshot = tmp_path / "report.png"
    shot = chromium(binary, f"--screenshot={screenshot}", "--window-size=1400,2000", report.as_uri())
    assert screenshot.exists(), shot.stderr[-2000:]
    with Image.open(screenshot) as image:
        assert image.size == (1400, 2000)
        assert np.unique(np.asarray(image.convert("L"))).size > 20


def test_missing_traces_failed_runs_and_an_interrupted_compare_still_report(tmp_path):
    folder = tmp_path / "partial"
    planned = [BASE.with_changes(strategy=s) for s in ("ddp", "dp", "dp-loss")]
    (folder / "traces").mkdir(parents=True)
    (folder / "compare.json").write_text(
        json.dumps({"command": "mgbench compare ...", "configs": [c.to_dict() for c in planned]})
    )
    append_result(folder / "results.jsonl", ok_result(planned[0], 0.2))
    append_result(folder / "results.jsonl", RunResult.flat(planned[1], "oom", error="CUDA out of memory"))
    with (folder / "results.jsonl").open("a") as handle:
        handle.write('{"framework": "pytorch", "strat')
    (folder / "traces" / f"{planned[1].run_id}.csv").write_text("")
    text = write_report(folder).read_text()
    page = scan(text)
    assert page.row_ids == [c.run_id for c in planned]
    assert "interrupted" in text and "1 line of results.jsonl could not be read" in text
    assert "no utilisation trace in this folder" in text
    names = sorted(p.name for p in (folder / "charts").glob("*.png"))
    # No row's step was split (an unprofiled GPU row): no chart of where step time goes.
    assert names == [f"steps-{planned[0].run_id}.png", "throughput-utilisation.png", "throughput.png"]


def test_report_usage_errors_are_one_line(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    blank = tmp_path / "blank"
    blank.mkdir()
    (blank / "results.jsonl").write_text("\n")
    for folder, message in (
        (tmp_path / "nope", "does not exist"),
        (empty, "has no results.jsonl"),
        (blank, "no readable"),
    ):
        done = mgbench("report", str(folder))
        assert done.returncode == 2, done.stderr
        assert done.stderr.count("\n") == 1 and message in done.stderr and done.stderr.startswith("mgbench: error:")


def test_compare_writes_a_report_and_report_rebuilds_it_on_a_copied_folder(tmp_path):
    out = tmp_path / "compare"
    done = mgbench(
        "compare",
        "--frameworks",
        "fake",
        "--strategies",
        "steady,crash",
        "--gpus",
        "2",
        *tiny_job(12),
        "--timeout",
        "30",
        "--out",
        str(out),
    )
    assert done.returncode == 1, done.stderr
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    page = scan((out / "report.html").read_text())
    assert page.row_ids == [row["run_id"] for row in rows] and len(rows) == 4
    assert (out / "charts" / "throughput.png").exists() and (out / "charts" / "scaling.png").exists()
    copied = tmp_path / "elsewhere"
    shutil.copytree(out, copied)
    shutil.rmtree(copied / "traces")
    (copied / "report.html").unlink()
    rebuilt = mgbench("report", str(copied))
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert rebuilt.stderr.strip() == f"report: {copied / 'report.html'}"
    text = (copied / "report.html").read_text()
    assert scan(text).row_ids == page.row_ids
    assert "no utilisation trace in this folder" in text
    assert not list((copied / "charts").glob("utilisation-*.png"))


def loss_row(devices: int, global_batch: int, step: float, samples_per_sec: float, **shares: float) -> RunResult:
    """An ok row of pytorch ddp, its step's breakdown `shares` (none without them)."""
    breakdown = {**dict.fromkeys(CATEGORIES, 0.0), **shares} if shares else None
    assert breakdown is None or sum(breakdown.values()) == pytest.approx(1)
    config = RunConfig.flat("pytorch", "ddp", "resnet50", devices, "cuda", global_batch // devices, 60)
    return RunResult.flat(config, "ok", median_step_seconds=step, samples_per_sec=samples_per_sec, breakdown=breakdown)


def loss_frame(*rows: RunResult) -> pd.DataFrame:
    """The rows as a report reads them, with the scaling figures their results file holds (`results_frame`)."""
    return results_frame(list(rows))


def test_scaling_loss_splits_the_lost_speed_up_by_the_time_each_category_added():
    """Weak scaling: 100 ms on 1 GPU (80 compute, 10 idle, 10 input wait), 125 ms on 2 (80
    compute, 20 exposed communication, 15 idle, 10 input wait). The step times give 1.6x of an
    ideal 2x: communication's 20 ms cost 2 x 20/125 = 0.32, idle's 5 ms 0.08; images/sec measured
    1.55x, so 0.05 is unexplained."""
    base, run = (
        row
        for _, row in loss_frame(
            loss_row(1, 32, 0.100, 320.0, compute=0.8, idle=0.1, input_wait=0.1),
            loss_row(2, 64, 0.125, 496.0, compute=0.64, communication=0.16, idle=0.12, input_wait=0.08),
        ).iterrows()
    )
    loss = scaling_loss(base, run)
    assert loss.ideal == 2 and loss.measured == pytest.approx(1.55) and loss.label == "pytorch ddp x2"
    assert loss.losses == pytest.approx(
        {"input_wait": 0, "host_to_device": 0, "compute": 0, "communication": 0.32, "idle": 0.08}
    )
    assert loss.unexplained == pytest.approx(0.05)
    assert sum(loss.losses.values()) + loss.unexplained == pytest.approx(loss.ideal - loss.measured, abs=1e-12)


def test_scaling_loss_under_strong_scaling_expects_half_the_work_per_device():
    """Global batch 64 on 1 then 2 GPUs: the ideal 2-GPU step is half of 200 ms. Compute 100 ms
    (10 more than half of 180), communication 25 ms, idle 0 (10 less than half of 20: a gain)."""
    base, run = (
        row
        for _, row in loss_frame(
            loss_row(1, 64, 0.200, 320.0, compute=0.9, idle=0.1),
            loss_row(2, 64, 0.125, 512.0, compute=0.8, communication=0.2),
        ).iterrows()
    )
    loss = scaling_loss(base, run)
    assert loss.losses == pytest.approx(
        {"input_wait": 0, "host_to_device": 0, "compute": 0.16, "communication": 0.4, "idle": -0.16}
    )
    assert loss.unexplained == pytest.approx(0, abs=1e-12) and loss.measured == pytest.approx(1.6)
    assert sum(loss.losses.values()) + loss.unexplained == pytest.approx(loss.ideal - loss.measured, abs=1e-12)


def test_scaling_losses_take_pairs_with_a_breakdown_on_both_rows():
    frame = loss_frame(
        loss_row(1, 32, 0.1, 320.0, compute=1.0),
        loss_row(2, 64, 0.125, 512.0, compute=1.0),
        loss_row(4, 128, 0.15, 853.0),
    )
    assert [loss.label for loss in scaling_losses(frame)] == ["pytorch ddp x2"]


def test_summary_reads_each_rows_bottleneck_or_why_it_has_none(tmp_path):
    folder, run_ids = fixture_folder(tmp_path)
    gluon = BASE.with_changes(framework="gluon", strategy="kvstore")
    append_result(
        folder / "results.jsonl",
        RunResult.flat(
            gluon,
            "ok",
            samples_per_sec=1.0,
            samples_per_sec_p10=1.0,
            samples_per_sec_p90=1.0,
            input_wait_fraction=0.0,
            warmup_steps=1,
            warmup_seconds=1.0,
            profile={"steps": 0, "error": "gluon has no profiler here"},
        ),
    )
    frame = load_run_folder(folder).frame
    readings = dict(zip(frame["run_id"], display_table(frame)["what holds it back"], strict=True))
    assert readings[run_ids[0]].startswith("compute 92%: the devices run the model's kernels")
    assert readings[run_ids[1]].startswith("communication 12%: ")
    assert readings[run_ids[2]].startswith("idle 25%: nothing runs on the device")
    assert readings[run_ids[3]] == ""  # failed
    assert readings[gluon.run_id] == "no breakdown: gluon has no profiler here"
    cpu = pd.Series({"status": "ok", "device_kind": "cpu", "profile": None, "breakdown": None})
    assert reading(cpu) == "" and reading(cpu.replace({"cpu": "cuda"})) == NOT_PROFILED
    timed = {"input_wait": 0.1, "step": 0.85, "synchronize": 0.0, "loss_read": 0.05}
    assert reading(pd.Series({**cpu, "host_breakdown": timed})) == (
        "input wait 10% (host timing): the host waits for the next batch: the input pipeline cannot keep up"
    )
    assert dict(limits_details(pd.Series({**cpu, "host_breakdown": timed})))["host timing"] == (
        "input wait 10%, step call 85%, synchronisation 0%, loss read 5%"
    )
    # an unprofiled GPU row (an --epochs run) reads its host timing too: input wait or the step itself
    assert reading(pd.Series({**cpu, "device_kind": "cuda", "host_breakdown": timed})).startswith(
        "input wait 10% (host timing): "
    )
    write_summary(folder, load_run_folder(folder).results)
    summary = pd.read_csv(folder / "summary.csv").set_index("run_id")
    assert (
        summary.loc[run_ids[2], "breakdown_idle_fraction"] == 0.25 and summary.loc[run_ids[2], "bottleneck"] == "idle"
    )
    assert set(LABELS) == set(COLORS) == set(READINGS) == set(CPU_READINGS) == set(CATEGORIES)


def test_summary_md_says_each_bottlenecks_meaning_once_under_short_labels(tmp_path):
    """summary.md's "what holds it back": each run a short label with its footnote's mark, what
    the label means said once under the table however many runs it explains."""
    timed = {"input_wait": 0.02, "step": 0.93, "synchronize": 0.0, "loss_read": 0.05}
    results = []
    for devices in (1, 2, 4):
        result = ok_result(BASE.with_changes(devices=devices, device_kind="cpu"), 0.2)
        result.host_breakdown = timed
        results.append(result)
    failed = RunResult.flat(BASE.with_changes(strategy="dp", devices=2, device_kind="cpu"), "failed", error="boom")
    write_summary(tmp_path, [*results, failed])
    text = (tmp_path / "summary.md").read_text()
    meaning = HOST_READINGS["step"]
    assert text.count(meaning) == 1
    assert f"- (a) step call (host timing): {meaning}\n" in text
    rows = [line for line in text.splitlines() if line.startswith("| pytorch")]
    assert len(rows) == 4 and sum("| step call 93% (a)" in row for row in rows) == 3


def test_a_run_folder_written_before_the_layout_change_still_reports(tmp_path):
    """A compare's folder from before the runner layer, the adapter contract and the breakdown
    (rows without the fields added since; the fake framework's crash row among them)."""
    folder = tmp_path / "old"
    shutil.copytree(Path(__file__).parent / "fixtures" / "run-folder-before-layout", folder)
    done = mgbench("report", str(folder))
    assert done.returncode == 0, done.stderr
    html = (folder / "report.html").read_text()
    assert "fake-steady-2cpu" in html and "fake adapter crashed on purpose" in html
    data = load_run_folder(folder)
    assert list(data.frame.status) == ["ok", "ok", "failed", "failed"]
    assert data.frame.set_index("run_id").loc["fake-steady-2cpu", "speedup"] > 0


@pytest.mark.parametrize("fmt", ["table", "md", "csv", "json"])
def test_report_prints_the_compact_summary_in_each_format_from_the_command_line(tmp_path, fmt):
    """`mgbench report RUN_DIR --format F` on a copied fixture folder: stdout is the summary in F,
    a script parses csv and json, md has a header row, the table ends on the verdict."""
    folder = tmp_path / "ddp"
    shutil.copytree(Path(__file__).parent / "fixtures" / "run-folder-ddp-resnet50-2gpu", folder)
    done = mgbench("report", str(folder), "--format", fmt)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == f"report: {folder / 'report.html'}"
    if fmt == "csv":
        table = pd.read_csv(io.StringIO(done.stdout))
        assert table.loc[0, ["framework", "strategy", "samples_per_sec_2dev"]].tolist() == ["pytorch", "ddp", 7914.0]
    elif fmt == "json":
        answer = json.loads(done.stdout)
        lines = answer["lines"]
        assert [(line["framework"], line["samples_per_sec_1dev"]) for line in lines] == [("pytorch", 3980.0)]
        assert answer["version"] == 1 and answer["ranked_by"] == "samples_per_sec" and answer["higher_is_better"]
        assert answer["verdict"].startswith("pytorch ddp is fastest on 2 GPUs: 7,914 img/s [7,835-7,993]")
        winner = {key: answer["winner"][key] for key in ("framework", "strategy", "devices", "value")}
        assert winner == {"framework": "pytorch", "strategy": "ddp", "devices": 2, "value": 7914.0}
        assert answer["ties"] == [] and answer["runner_up"] is None and answer["warnings"] == []
        rows = {row["devices"]: row for row in answer["rows"]}
        frame = load_run_folder(folder).frame.set_index("devices")
        for devices, row in rows.items():
            assert row["samples_per_sec"] == pytest.approx(frame.loc[devices, "samples_per_sec"])
            assert row["spread"]["low"] == pytest.approx(frame.loc[devices, "samples_per_sec_p10"])
            assert row["spread"]["high"] == pytest.approx(frame.loc[devices, "samples_per_sec_p90"])
            assert row["rounds"] is None and row["interval"]["low"] is None and row["held_back_by"]["name"] == "idle"
    elif fmt == "md":
        title, blank, header, rule, row = done.stdout.splitlines()[:5]
        assert title == "**resnet50 bf16 channels_last**" and blank == "" and row.startswith("| pytorch")
        assert [cell.strip() for cell in header.strip("|").split("|")][:3] == ["framework", "strategy", "1 GPU img/s"]
        assert set(rule) <= set("|-: ")
    else:
        words = " ".join(done.stdout.split())
        # a folder from before rounds: no interval, so the noise floor's, 1% either side
        assert "│ pytorch │ ddp │ 3,980 │ 7,914 │ 7,835-7,993 │" in words
        assert "pytorch ddp is fastest on 2 GPUs: 7,914 img/s [7,835-7,993]" in words
        assert ("held back by idle (13% of the step). pytorch ddp x2 is held back by launch overhead") in words
        assert words.endswith("try --compile (torch.compile), whose compiled step launches fewer, larger kernels.")


def test_run_details_say_how_close_the_row_is_to_its_device_and_what_stands_between():
    """A host-bound row: keras-torch DenseNet-121 on one H200, 479 img/s against a device-busy ceiling of 930."""
    row = pd.Series(
        {
            "flops_per_sample": 16.76e9,
            "achieved_tflops": 16.76e9 * 479 / 1e12,
            "peak_tflops": 790.0,
            "peak_fraction": 16.76e9 * 479 / 1e12 / 790.0,
            "peak_source": "measured dense matmul (bandwidth.json)",
            "vendor_peak_tflops": 989.5,
            "devices": 1,
            "device_ceiling_samples_per_sec": 930.0,
            "ceiling_taken": {"host": 441.0, "input": 10.0, "communication": 0.0, "uneven_steps": 0.0},
            "bottleneck": "idle",
            "timing_method": "cuda events",
            "host_breakdown": None,
            "profile": {"kernels_per_step": 8512.4},
            "activation_bytes_estimate": 32.48e6 * 128 * 2,
        }
    )
    details = dict(limits_details(row))
    assert details["work"] == (
        "16.8 GFLOP per image, 8.0 TFLOP/s, 1% of 790 TFLOP/s (measured dense matmul (bandwidth.json)), "
        "1% of the vendor's 989.5 TFLOP/s"
    )
    two = row.copy()
    two["devices"], two["achieved_tflops"], two["peak_fraction"] = 2, 270.0, 270.0 / (2 * 790.0)
    assert dict(limits_details(two))["work"].endswith(
        "17% of 790 TFLOP/s (measured dense matmul (bandwidth.json)), 14% of the vendor's 989.5 TFLOP/s"
    )
    two["peak_tflops"], two["peak_source"], two["peak_fraction"] = 989.5, "vendor: NVIDIA H200 SXM", 270.0 / 1979.0
    assert dict(limits_details(two))["work"].endswith(", 14% of 990 TFLOP/s (vendor: NVIDIA H200 SXM)")
    assert (
        details["device-busy ceiling"]
        == "930 img/s; taken from it (img/s): host 441, input 10, communication 0, uneven steps 0"
    )
    assert details["bound"] == "host-bound" and details["timing"] == "cuda events"
    assert details["kernels per step"] == "8512" and "host timing" not in details
    assert details["activation memory (estimate)"] == "7.74 GiB per device"


def test_time_to_train_and_test_auc_are_tabled_and_charted_for_rows_trained_in_epochs(tmp_path):
    """The seeds' comparison: time to train N epochs with validation, and the test split's AUC."""
    from mgbench.reports.training import time_to_train_chart, training_table

    epochs = [
        {"epoch": 1, "samples_per_sec": 100.0, "val_auc": 0.6},
        {"epoch": 2, "samples_per_sec": 300.0, "val_auc": 0.7},
    ]
    frame = pd.DataFrame(
        {
            "framework": ["pytorch", "keras-jax", "gluon"],
            "strategy": ["ddp", "jax-shard-map", "device"],
            "model": ["densenet121"] * 3,
            "precision": ["bf16"] * 3,
            "data_format": ["channels_last"] * 3,
            "device_kind": ["cpu"] * 3,
            "devices": [2, 2, 2],
            "status": ["ok", "ok", "failed"],
            "loader": ["torch.utils.data.DataLoader", "keras.utils.PyDataset", None],
            "loader_workers": [2, 2, None],
            "time_to_train_seconds": [30.0, 12.5, None],
            "compile_seconds": [None, 9.0, None],
            "epoch_samples_per_sec": [150.0, 80.0, None],
            "epoch_metrics": [epochs, epochs[:1], []],
            "test_metrics": [{"loss": 0.5, "auc": 0.71}, {"loss": 0.6, "auc": 0.64}, {}],
        }
    )
    table = training_table(frame)
    assert list(table["framework"]) == ["keras-jax", "pytorch"]
    # the epoch rate is the row's, over its time to train (compile, warm-up, stalls and validation in)
    assert list(table["epochs"]) == [1, 2] and list(table["epoch_samples_per_sec"]) == [80.0, 150.0]
    assert table["compile_seconds"].tolist()[0] == 9.0 and np.isnan(table["compile_seconds"].tolist()[1])
    assert list(table["test_auc"]) == [0.64, 0.71] and list(table["val_auc"]) == [0.6, 0.7]
    path = time_to_train_chart(table, tmp_path / "time-to-train.png", frame)
    with Image.open(path) as image:
        assert image.format == "PNG" and np.unique(np.asarray(image.convert("L"))).size > 20
    assert training_table(frame.drop(columns=["time_to_train_seconds"])).empty


NULLABLE = ("input_wait_fraction", "samples_per_sec_p10", "samples_per_sec_p90", "warmup_steps", "startup_seconds")
"""Figures an ok row may write as null (no value; its `warnings` say why)."""
NULLABLE_HEADERS = ("input wait %", "p10-p90", "start-up s")
"""The summary table's columns showing them."""


@pytest.mark.parametrize("nulled", [(1, 2), (2,)], ids=["every-ok-row", "one-ok-row"])
def test_ok_rows_with_null_figures_report_a_dash_on_every_path(tmp_path, capsys, nulled):
    """Nulls in an ok row's optional figures (every row's, so pandas keeps None, or one row's,
    so NaN), a null breakdown share and a null epoch rate: report.html, summary.md/csv and the
    compact summary in each format (what `mgbench report` and `compare` print) are written, each
    null a dash, never `nan`."""
    folder = tmp_path / "run"
    for devices in (1, 2):
        result = ok_result(BASE.with_changes(devices=devices), 0.2, epochs(0.0))
        result.by_epoch.time_to_train_seconds, result.by_epoch.test_metrics = 500.0, {"auc": None}
        if devices in nulled:
            result = RunResult.from_record({**result.to_record(), **dict.fromkeys(NULLABLE)})
            result.profiled.breakdown = {**BREAKDOWNS[devices], "idle": None}
            result.profiled.bottleneck, result.profiled.breakdown_clock = "idle", "device"
            result.by_epoch.epoch_metrics = [
                {**epoch, "samples_per_sec": None} for epoch in result.by_epoch.epoch_metrics
            ]
        append_result(folder / "results.jsonl", result)
        write_trace(folder, result.run_id, devices)
    page = write_report(folder).read_text()
    frame = load_run_folder(folder).frame
    assert scan(page).row_ids == list(frame["run_id"])
    write_summary(folder, load_run_folder(folder).results)
    table = display_table(frame).set_index(frame["run_id"])
    if nulled == (1, 2):  # a column with a dash in every row is left out
        assert not set(NULLABLE_HEADERS) & set(table.columns)
    else:
        for devices in (1, 2):
            cells = table.loc[BASE.with_changes(devices=devices).run_id, list(NULLABLE_HEADERS)]
            assert (cells == "-").all() == (devices in nulled), cells
    outputs = [page, (folder / "summary.md").read_text()]
    for fmt in ("table", "md", "csv", "json"):
        print_summary(frame, "nulls", fmt)
        outputs.append(capsys.readouterr().out)
    assert not [text for text in outputs if re.search(r"\bnan\b", text, re.IGNORECASE)]


def snapshot(folder: Path) -> dict[str, tuple[bytes | None, int]]:
    """Every file's bytes and every entry's modification time under `folder`, the folder's own too."""
    entries = {".": (None, folder.stat().st_mtime_ns)}
    for path in sorted(folder.rglob("*")):
        data = path.read_bytes() if path.is_file() else None
        entries[str(path.relative_to(folder))] = (data, path.stat().st_mtime_ns)
    return entries


def test_report_out_renders_elsewhere_and_leaves_the_run_folder_byte_for_byte_as_it_was(tmp_path):
    """A colleague's folder, its report made once already: `report --out DIR` writes DIR's report
    and charts, twice over, and changes no byte nor time of the folder; a DIR inside the folder, or
    holding other files, is one line and nothing is written."""
    folder, run_ids = fixture_folder(tmp_path)
    write_report(folder)
    before = snapshot(folder)
    out = tmp_path / "elsewhere"
    for _ in range(2):
        done = mgbench("report", str(folder), "--out", str(out))
        assert done.returncode == 0, done.stderr
        assert done.stderr.strip() == f"report: {out / 'report.html'}"
    assert snapshot(folder) == before
    page = (out / "report.html").read_text()
    assert scan(page).row_ids == run_ids and "charts/utilisation-all.png" in page
    assert {path.name for path in (out / "charts").glob("*.png")} == {
        path.name for path in (folder / "charts").glob("*.png")
    }
    assert sorted(path.name for path in out.iterdir()) == ["charts", "report.html"]
    cluttered = tmp_path / "cluttered"
    cluttered.mkdir()
    (cluttered / "notes.txt").write_text("mine")
    for bad, message in ((folder / "sub", "is inside the run folder"), (cluttered, "holds other files (notes.txt)")):
        assert message in one_line_error(mgbench("report", str(folder), "--out", str(bad)))
    assert snapshot(folder) == before and sorted(p.name for p in cluttered.iterdir()) == ["notes.txt"]
