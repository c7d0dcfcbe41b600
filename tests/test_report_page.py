"""The report's first screen: the verdict and the compact table within 1400x900, no sideways scroll;
every table within a 1280-px window; what planning noted (frameworks left out, the CPU job shrink)
and 1-device folders shown as they are."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from conftest import append_result
from PIL import Image
from test_reports import BASE, SCREENSHOTS, chromium, chromium_or_skip, fixture_folder, ok_result

from mgbench.measure.breakdown import CATEGORIES, bottleneck
from mgbench.projection.calibration import project_folder, write_projection
from mgbench.projection.interconnects import preset_link
from mgbench.projection.model import Interconnect
from mgbench.reports.folder_data import load_run_folder
from mgbench.reports.html import write_report

WINDOW = (1400, 900)
NARROW_WINDOW = (1280, 900)
"""A laptop's browser window: every table of the report fits it."""
PHONE_WINDOW = (390, 844)
"""A phone's screen (CSS pixels): the report fits it too, its tables as cards."""
MEASURE = """<script>
const box = (id) => document.getElementById(id).getBoundingClientRect();
const room = (element) => {
  const style = getComputedStyle(element);
  return element.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
};
const tables = [...document.querySelectorAll("table")].map((table) => ({
  name: table.id || table.className || table.rows[0].textContent.slice(0, 40),
  width: table.getBoundingClientRect().width, room: room(table.parentElement)}));
parent.document.body.setAttribute("data-layout", JSON.stringify({
  scroll_width: document.documentElement.scrollWidth, window_width: window.innerWidth,
  verdict_bottom: box("verdict").bottom, compact_bottom: box("compact").bottom, tables}));
</script>"""
"""Added to a copy of the page (the report itself holds no script), shown in a frame of the window's
width (`report_screenshots.framed`): writes its layout into the DOM of the page around the frame,
each table's width beside the content width of the element holding it."""
LEFT_OUT = "keras: keras-tf left out: tensorflow not installed (make env-keras-tf)"
SHRINK = "CPU devices and no job size given: the job is shrunk to --image-size 64 --batch-per-gpu 8 --steps 20"


HOST_TIMING = {"input_wait": 0.31, "step": 0.66, "synchronize": 0.0, "loss_read": 0.03}
"""An unprofiled CPU row's host timing: a third of the step waiting for input."""


def cpu_folder(root: Path, profiled: bool = True) -> Path:
    """A CPU compare: two frameworks on 1 and 2 CPU devices, breakdowns from CPU traces (or, not
    profiled, as by default on CPU devices, only host timing), and the compare.json of a
    `--frameworks keras,pytorch` that left keras-tf out and shrank the job."""
    folder = root / "cpu"
    configs = []
    for framework, strategy, step in (("pytorch", "ddp", 0.5), ("keras-jax", "jax-shard-map", 0.8)):
        for devices in (1, 2):
            config = BASE.with_changes(framework=framework, strategy=strategy, devices=devices, device_kind="cpu")
            result = ok_result(config, step * (1 + 0.3 * (devices - 1)))
            result.host_breakdown = HOST_TIMING
            if profiled:
                result.profiled.breakdown = dict(zip(CATEGORIES, (0.05, 0.0, 0.55, 0.0, 0.40), strict=True))
                result.profiled.bottleneck, result.profiled.breakdown_clock = (
                    bottleneck(result.profiled.breakdown),
                    "cpu",
                )
            append_result(folder / "results.jsonl", result)
            configs.append(config.to_dict())
    record = {"command": "mgbench compare --frameworks keras,pytorch", "configs": configs}
    (folder / "compare.json").write_text(json.dumps({**record, "left_out": [LEFT_OUT], "job_shrink": SHRINK}))
    return folder


def page_layout(binary: str, report: Path, tmp_path: Path, window: tuple[int, int]) -> dict:
    """The page's layout (`MEASURE`) as Chromium lays it out in a window of `window` pixels."""
    probe = tmp_path / "probe.html"
    probe.write_text(SCREENSHOTS.framed(report.read_text().replace("</body>", MEASURE + "</body>"), *window))
    size = f"--window-size={max(window[0], SCREENSHOTS.NARROWEST_WINDOW)},{window[1]}"
    dom = chromium(binary, "--dump-dom", size, probe.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    return json.loads(re.search(r'data-layout="([^"]*)"', dom.stdout).group(1).replace("&quot;", '"'))


def first_screen(binary: str, report: Path, tmp_path: Path) -> dict:
    """The page's layout in a 1400x900 window, and a screenshot of that first screen."""
    layout = page_layout(binary, report, tmp_path, WINDOW)
    screenshot = tmp_path / "first-screen.png"
    chromium(binary, f"--screenshot={screenshot}", f"--window-size={WINDOW[0]},{WINDOW[1]}", report.as_uri())
    with Image.open(screenshot) as image:
        assert image.size == WINDOW
        assert np.unique(np.asarray(image.convert("L"))).size > 20
    return layout


def test_gpu_and_cpu_reports_open_on_the_verdict_and_the_compact_table_without_sideways_scroll(tmp_path):
    binary = chromium_or_skip()
    gpu, _ = fixture_folder(tmp_path)
    for folder in (gpu, cpu_folder(tmp_path)):
        report = write_report(folder)
        layout = first_screen(binary, report, tmp_path)
        assert layout["scroll_width"] <= layout["window_width"] == WINDOW[0], (folder, layout)
        assert 0 < layout["verdict_bottom"] < layout["compact_bottom"] <= WINDOW[1], (folder, layout)


def trained_and_projected_folder(root: Path) -> Path:
    """The GPU fixture folder (a failed row among its runs) with every table a report can hold:
    its rows with epochs also trained to a time and a test AUC on a real dataset's loader, and a
    projection to 8 GPUs."""
    folder, _ = fixture_folder(root)
    rows = [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]
    for row in rows:
        if row["epoch_metrics"]:
            loader = {"loader": "torch.utils.data.DataLoader", "loader_workers": 8}
            row.update(loader, time_to_train_seconds=550.0, test_metrics={"auc": 0.71, "top1": 0.64})
    (folder / "results.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    target = Interconnect(preset_link("nvlink4"), None, gpus_per_node=8)
    write_projection(folder, project_folder(load_run_folder(folder), target, [2, 8], 1_000_000))
    return folder


@pytest.mark.parametrize("window", [NARROW_WINDOW, PHONE_WINDOW], ids=["laptop", "phone"])
def test_every_table_of_a_gpu_and_a_cpu_report_fits_a_laptops_and_a_phones_window(tmp_path, window):
    """The tables of every run, time to train, the projection, the environment and each run's
    details: no sideways scroll, and no table wider than what holds it (one in a scrolling box
    would be); on a phone each table's rows are cards, a cell a line."""
    binary = chromium_or_skip()
    for folder in (trained_and_projected_folder(tmp_path), cpu_folder(tmp_path)):
        report = write_report(folder)
        assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in report.read_text()
        layout = page_layout(binary, report, tmp_path, window)
        assert layout["scroll_width"] <= layout["window_width"] == window[0], (folder, layout)
        wide = [table for table in layout["tables"] if table["width"] > table["room"] + 0.5]
        assert not wide, (folder, wide)
        names = {table["name"] for table in layout["tables"]}
        assert {"compact", "summary"} <= names, names
    text = (tmp_path / "run" / "report.html").read_text()
    assert "<h2>Time to train</h2>" in text and "Scaling past this machine" in text


def test_the_verdict_names_the_fastest_line_its_lead_scaling_and_bottleneck(tmp_path):
    text = write_report(cpu_folder(tmp_path)).read_text()
    verdict = re.search(r'<p class="verdict" id="verdict">([^<]*)</p>', text).group(1)
    assert verdict.startswith("pytorch ddp is fastest on 2 CPU devices: ")
    assert re.search(r"1\.60x keras-jax jax-shard-map; 1\.54x its 1-CPU device throughput \(77% ", verdict), verdict
    assert "held back by idle (40% of the step)." in verdict and "no operator runs" not in verdict
    assert text.count("idle: no operator runs") == 1  # what it means: the compact table's note, once
    assert LEFT_OUT in text and SHRINK in text


def test_an_unprofiled_cpu_report_says_what_holds_the_fastest_line_back_from_host_timing(tmp_path):
    """`--profile auto` takes no profile on CPU devices: the verdict and the compact table's
    "holds back" column read the rows' host timing instead, and say so."""
    text = write_report(cpu_folder(tmp_path, profiled=False)).read_text()
    verdict = re.search(r'<p class="verdict" id="verdict">([^<]*)</p>', text).group(1)
    assert verdict.startswith("pytorch ddp is fastest on 2 CPU devices: ")
    assert verdict.endswith("held back by input wait (31% of the step, host timing).")
    compact = re.search(r'<table class="compact" id="compact">(.*?)</table>', text).group(1)
    assert "<th>holds<br>back</th>" in compact and compact.count("input wait 31%") == 2
    meaning = "the host waits for the next batch: the input pipeline cannot keep up"
    every_run = text[text.index("<h2>Every run</h2>") : text.index("<h2>", text.index("<h2>Every run</h2>") + 1)]
    assert every_run.count(meaning) == 1 and every_run.count("input wait 31% (a)") >= 1
    assert f'<ol class="notes-list" type="a"><li>input wait (host timing): {meaning}</li></ol>' in every_run


def test_a_one_device_folder_shows_no_speed_up_or_efficiency(tmp_path):
    folder = tmp_path / "one"
    for strategy, step in (("ddp", 0.2), ("dp", 0.3)):
        append_result(folder / "results.jsonl", ok_result(BASE.with_changes(strategy=strategy), step))
    text = write_report(folder).read_text()
    headers = re.findall(r"<th>([^<]*)</th>", text)
    assert "images/sec" in headers and "speedup" not in headers and "efficiency" not in headers
    assert "eff." not in text and "scaling efficiency" not in text
    assert "1.50x pytorch dp" in text


def test_the_utilisation_chart_shades_the_steady_steps_marks_each_phase_and_parts_the_two_memories(
    tmp_path, monkeypatch
):
    """Drawn, not only computed: both panels shade every phase where the row's clocks put it, the
    steady steps strongest; the memory panel draws the framework's own peak (dashed) apart from
    what NVML says the device holds, under its capacity (dotted)."""
    import pandas as pd

    from mgbench.measure.phases import run_phases
    from mgbench.reports import run_charts
    from mgbench.reports.summary import results_frame

    result = ok_result(BASE.with_changes(devices=2), 0.2)
    result.compiled.compile_seconds, result.profiled.profile_seconds, result.peak_memory_bytes = 3.0, 1.5, 3 * 2**30
    row = results_frame([result]).iloc[0]
    trace = pd.DataFrame(
        [
            {"seconds": t, "kind": "gpu", "device": gpu, "utilization_pct": 90, "memory_used_mib": 100 * 1024}
            | {"memory_total_mib": 140 * 1024, "sm_clock_mhz": 1980, "mem_clock_mhz": 2619}
            for t in range(25)
            for gpu in (0, 1)
        ]
    )
    drawn = []
    monkeypatch.setattr(run_charts, "save", lambda figure, path: drawn.append(figure) or path)
    run_charts.utilisation_chart(row, trace, tmp_path / "utilisation.png")
    top, bottom = drawn[0].axes[:2]
    phases = {phase.name: (phase.start, phase.end) for phase in run_phases(row)}
    assert list(phases) == ["start-up", "compile", "warm-up", "steady", "profile"]
    assert phases["compile"] == pytest.approx((9.5, 12.5)) and phases["profile"][1] - phases["profile"][0] == 1.5
    for axes in (top, bottom):
        spans = [patch for patch in axes.patches if patch.get_width() > 0]
        edges = [edge for patch in spans for edge in (patch.get_bbox().x0, patch.get_bbox().x1)]
        assert edges == pytest.approx([edge for span in phases.values() for edge in span])
        alphas = dict(zip(phases, (p.get_alpha() for p in spans), strict=True))
        assert alphas["steady"] > max(alpha for name, alpha in alphas.items() if name != "steady")
    legend = [text.get_text() for text in top.get_legend().get_texts()]
    assert set(phases) <= set(legend) and {"GPU 0", "GPU 1"} <= set(legend)
    lines = {line.get_label(): line for line in bottom.lines}
    own = lines["framework's own peak 3.00 GiB"]
    assert own.get_linestyle() == "--" and set(own.get_ydata()) == {3.0}
    assert set(lines["GPU 0"].get_ydata()) == {100.0} and "NVML" in bottom.get_ylabel()
    capacities = [line for line in bottom.lines if line.get_linestyle() == ":"]
    assert [set(line.get_ydata()) for line in capacities] == [{140.0}, {140.0}]
    assert "framework's own peak 3.00 GiB" in [text.get_text() for text in bottom.get_legend().get_texts()]


CHEXNET_4GPU = Path(__file__).parent / "fixtures" / "run-folder-chexnet-4gpu"
"""The rows of a 4x H200 compare (2026-11-28, benchmarks/RUNS.md run e): three frameworks, one
of them compiled, trained 2 epochs on 1 and 4 GPUs, every row with warnings: the widest compact
table a report has shown, a time, AUC, rate and range for each count."""


@pytest.mark.parametrize("window", [NARROW_WINDOW, PHONE_WINDOW], ids=["laptop", "phone"])
def test_an_epochs_compare_on_1_and_4_gpus_fits_a_laptops_and_a_phones_window(tmp_path, window):
    binary = chromium_or_skip()
    folder = tmp_path / "chexnet"
    folder.mkdir()
    (folder / "results.jsonl").write_bytes((CHEXNET_4GPU / "results.jsonl").read_bytes())
    report = write_report(folder)
    layout = page_layout(binary, report, tmp_path, window)
    assert layout["scroll_width"] <= layout["window_width"] == window[0], layout
    wide = [table for table in layout["tables"] if table["width"] > table["room"] + 0.5]
    assert not wide, wide
