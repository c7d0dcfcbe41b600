"""`report` and `project` outputs a script or a colleague can trust: rates at the ends of a float's
range still give a report and a projection, JSON that is JSON, names shown as the OS shows them,
a dangling `--out` link refused."""

from __future__ import annotations

import json
import os
import re
import warnings
from pathlib import Path

import pandas as pd
import pytest
from conftest import append_result, mgbench, one_line_error
from matplotlib.figure import Figure
from matplotlib.text import Text
from test_report_page import cpu_folder
from test_reports import BASE, BREAKDOWNS, fixture_folder, ok_result, write_trace

from mgbench.measure.breakdown import bottleneck
from mgbench.records.results import RunResult
from mgbench.reports.compact import print_summary
from mgbench.reports.figures import job_title
from mgbench.reports.folder_data import load_run_folder
from mgbench.reports.html import write_report


def rated_folder(root: Path, rates: dict[tuple[str, int], float], failed: bool = False, profiled: bool = False) -> Path:
    """A run folder of ok rows, each `(strategy, devices)` at its steady rate in img/s (its step
    spread 1% either side, its interval 0.5%), with a trace each; a crashed row beside them where
    `failed`; each with the fixture's breakdown of its device count where `profiled`."""
    folder = root / "run"
    folder.mkdir(parents=True)
    for (strategy, devices), rate in rates.items():
        result = ok_result(BASE.with_changes(strategy=strategy, devices=devices), 0.2)
        if profiled:
            result.profiled.breakdown, result.profiled.breakdown_clock = BREAKDOWNS[devices], "device"
            result.profiled.bottleneck = bottleneck(BREAKDOWNS[devices])
        record = {
            **result.to_record(),
            "samples_per_sec": rate,
            "samples_per_sec_p10": rate * 0.99,
            "samples_per_sec_p90": rate * 1.01,
            "samples_per_sec_low": rate * 0.995,
            "samples_per_sec_high": rate * 1.005,
        }
        with (folder / "results.jsonl").open("a") as handle:
            handle.write(json.dumps(record) + "\n")
        write_trace(folder, result.run_id, devices)
    if failed:
        crashed = BASE.with_changes(strategy="dp", devices=1)
        append_result(folder / "results.jsonl", RunResult.flat(crashed, "failed", error="exit code 1\nboom"))
    return folder


def test_the_json_answer_holds_null_where_a_figure_has_no_finite_value(tmp_path):
    """A line at 1e-310 img/s beside one at 100: the winner's lead overflows; the folder's failed
    row leaves the ok rows' error NaN in the frame. Both are null in JSON that `json.loads` reads
    strictly (no NaN, no Infinity)."""
    folder = rated_folder(tmp_path, {("ddp", 1): 100.0, ("gloo", 1): 1e-310}, failed=True)
    done = mgbench("report", str(folder), "--format", "json")
    assert done.returncode == 0, done.stderr

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} in the answer")

    answer = json.loads(done.stdout, parse_constant=refuse)
    assert answer["winner"]["strategy"] == "ddp" and answer["runner_up"]["strategy"] == "gloo"
    assert answer["lead"] is None
    errors = {row["strategy"]: row["error"] for row in answer["rows"]}
    assert errors == {"ddp": None, "gloo": None, "dp": "exit code 1"}


def test_report_out_to_a_dangling_link_is_refused_naming_it(tmp_path):
    folder = rated_folder(tmp_path, {("ddp", 1): 100.0})
    link = tmp_path / "latest"
    link.symlink_to(tmp_path / "gone")
    error = one_line_error(mgbench("report", str(folder), "--out", str(link)))
    assert f"--out {link} is a link to {tmp_path / 'gone'}, which does not exist" in error
    assert link.is_symlink() and not (tmp_path / "gone").exists()


def test_a_name_that_is_not_utf8_is_printed_with_backslash_escapes(tmp_path):
    """`--out` named with byte 0xff: the report goes there, and the path printed shows the byte as
    `\\xff` (in a UTF-8 locale), never a surrogate or a traceback; so does a refusal naming it."""
    folder = rated_folder(tmp_path, {("ddp", 1): 100.0})
    out = Path(os.fsdecode(bytes(tmp_path) + b"/r\xff"))
    done = mgbench("report", str(folder), "--out", str(out), LC_ALL="C.UTF-8", PYTHONIOENCODING="utf-8")
    assert done.returncode == 0, done.stderr
    assert (out / "report.html").is_file()
    assert done.stderr == f"report: {tmp_path}/r\\xff/report.html\n"
    clutter = Path(os.fsdecode(bytes(tmp_path) + b"/s\xfe"))
    clutter.mkdir()
    (clutter / "mine.txt").write_text("mine")
    error = one_line_error(mgbench("report", str(folder), "--out", str(clutter), LC_ALL="C.UTF-8"))
    assert f"--out {tmp_path}/s\\xfe holds other files (mine.txt)" in error


def test_every_error_line_shows_a_name_that_is_not_utf8_with_backslash_escapes(tmp_path):
    """A name with byte 0xff in whatever check refuses it (a run folder that does not exist, an
    argument argparse refuses, `diff`'s folders): the one error line shows `\\xff`, never the
    surrogate Python holds it as."""
    odd = os.fsdecode(bytes(tmp_path) + b"/r\xff")
    utf8 = {"LC_ALL": "C.UTF-8", "PYTHONIOENCODING": "utf-8"}
    assert f"run folder {tmp_path}/r\\xff does not exist" in one_line_error(mgbench("report", odd, **utf8))
    assert f"{tmp_path}/r\\xff" in one_line_error(mgbench("diff", odd, odd, **utf8))
    assert "'r\\xff'" in one_line_error(mgbench("compare", "--precision", "r" + odd[-1], **utf8))


def test_report_prints_the_table_compare_ends_on_then_the_report_path(tmp_path, capsys):
    """`report RUN_DIR` with no `--format`: stdout is the compact table and its verdict, as
    `compare` prints them at its end (`print_summary` in `table`), and stderr the report's path."""
    folder = rated_folder(tmp_path, {("ddp", 1): 100.0, ("ddp", 2): 190.0})
    done = mgbench("report", str(folder), COLUMNS="200")
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == f"report: {folder / 'report.html'}"
    print_summary(load_run_folder(folder).frame, job_title(load_run_folder(folder).frame), "table")
    assert done.stdout == capsys.readouterr().out
    assert "pytorch ddp is fastest on 2 GPUs: 190.0 img/s [188.1-191.9]" in done.stdout


@pytest.fixture
def drawn(monkeypatch) -> list[Figure]:
    """Every figure a report saves, kept for its geometry once drawn."""
    figures: list[Figure] = []
    save = Figure.savefig

    def keep(figure: Figure, *args, **kwargs) -> None:
        save(figure, *args, **kwargs)
        figures.append(figure)

    monkeypatch.setattr(Figure, "savefig", keep)
    return figures


def outside_the_frame(figure: Figure) -> list[str]:
    """What of the drawn figure reaches past its edges (axes with their labels and ticks, legends,
    titles), by matplotlib's own extents, in inches, to a hundredth."""
    renderer = figure.canvas.get_renderer()
    width, height = figure.get_size_inches()
    inches = figure.dpi_scale_trans.inverted()
    parts = [(axes.get_xlabel() or axes.get_title(), axes.get_tightbbox(renderer)) for axes in figure.axes]
    parts += [(text.get_text(), text.get_window_extent(renderer)) for text in figure.texts if text.get_text()]
    parts += [("legend", legend.get_window_extent(renderer)) for legend in figure.legends]
    found = []
    for name, pixels in parts:
        box = pixels.transformed(inches)
        if box.x0 < -0.01 or box.y0 < -0.01 or box.x1 > width + 0.01 or box.y1 > height + 0.01:
            found.append(name)
    return found


def legend_labels(figure: Figure) -> list[str]:
    return [text.get_text() for legend in figure.legends for text in legend.get_texts()]


EXTREMES = {
    "tiny": {("ddp", 1): 1e-320, ("ddp", 2): 2e-320},
    "huge": {("ddp", 1): 1e300, ("ddp", 2): 1.5e300},
    "apart": {("ddp", 1): 1e-300, ("ddp", 2): 1e10},
    "float-max": {("ddp", 1): 1e308, ("ddp", 2): 1.7e308},
    "both-ends": {("ddp", 1): 1e-320, ("gloo", 1): 1e300, ("ddp", 2): 1e-320, ("gloo", 2): 1e300},
}


@pytest.mark.parametrize("profiled", [False, True], ids=["unprofiled", "profiled"])
@pytest.mark.parametrize("rates", EXTREMES.values(), ids=EXTREMES.keys())
def test_rates_at_either_end_of_a_float_still_make_every_chart_inside_its_frame(tmp_path, drawn, rates, profiled):
    """No traceback, no matplotlib warning (a layout collapsed under a 301-digit label, a margin
    overflowing), each bar's figure written short (`1e-320`, `1.5e+300`) and every text inside
    its chart; an overflowed speed-up (1e10 over 1e-300) left out of the scaling chart and, rows
    profiled, of the scaling loss's."""
    folder = rated_folder(tmp_path, rates, profiled=profiled)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        page = write_report(folder).read_text()
    assert "charts/throughput.png" in page and "charts/scaling.png" in page
    assert ("charts/scaling-loss.png" in page) == (profiled and rates is not EXTREMES["apart"])
    throughput = next(figure for figure in drawn if "Throughput:" in figure.axes[0].get_title())
    figures = [text.get_text() for text in throughput.axes[0].texts]
    assert sorted(figures) == sorted(f"{rate:,.0f}" if 1 <= rate < 1e7 else f"{rate:.3g}" for rate in rates.values())
    assert all(len(text) < 12 for text in figures)
    assert [figure for figure in drawn if outside_the_frame(figure)] == []


def test_every_chart_of_a_gpu_and_a_cpu_report_keeps_its_text_inside_and_names_each_entry_once(tmp_path, drawn):
    """The GPU fixture (three device counts, epochs, breakdowns, a crashed row) and the CPU one:
    no axis label past its chart's edge (the utilisation axis' "steady window" was cut at 6
    inches), no legend naming an entry twice (the scaling chart's "ideal"), each throughput
    figure above its whisker's cap, not on it."""
    gpu, _ = fixture_folder(tmp_path)
    for folder in (gpu, cpu_folder(tmp_path)):
        write_report(folder)
    assert len(drawn) > 10
    assert {id(figure): outside_the_frame(figure) for figure in drawn if outside_the_frame(figure)} == {}
    for figure in drawn:
        labels = legend_labels(figure)
        assert len(labels) == len(set(labels)), labels
    for figure in drawn:
        axes = figure.axes[0]
        if not axes.get_title().startswith("Throughput:"):
            continue
        caps = [line.get_ydata().max() for line in axes.lines]  # the whiskers' caps
        for text in axes.texts:
            x, y = text.xy
            near = [cap for line, cap in zip(axes.lines, caps) if abs(line.get_xdata().mean() - x) < 1e-9]
            assert near and y >= max(near) * (1 - 1e-12), (text.get_text(), y, near)


def strict_json(path: Path) -> dict:
    """A JSON file read as JSON is: NaN or Infinity in it fail the test."""

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} in {path}")

    return json.loads(path.read_text(), parse_constant=refuse)


def test_project_leaves_out_a_series_whose_step_passes_a_float_and_nulls_what_overflows(tmp_path):
    """ddp at 1e-320 img/s (its step's seconds overflow) beside dp at 100 and 150: dp is projected,
    ddp is listed as not projected saying why; a series at 1e-300 and 1e10 img/s (its measured
    efficiency overflows) is projected with that efficiency null. projection.json is JSON, the
    report holds the projection, nothing on stderr."""
    slow = rated_folder(tmp_path / "slow", {("ddp", 1): 1e-320, ("ddp", 2): 2e-320, ("dp", 1): 100.0, ("dp", 2): 150.0})
    done = mgbench("project", str(slow), "--gpus", "8", "--interconnect", "nvlink4", PYTHONWARNINGS="error")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    projection = strict_json(slow / "projection.json")
    assert [series["strategy"] for series in projection["series"]] == ["dp"]
    [left_out] = projection["not_projected"]
    assert left_out["strategy"] == "ddp" and "at 1e-320 img/s takes longer for its 32 images" in left_out["reason"]
    assert "ddp densenet121 bf16 32/GPU not projected: pytorch-ddp-1cuda at 1e-320 img/s" in done.stdout
    apart = rated_folder(tmp_path / "apart", {("ddp", 1): 1e-300, ("ddp", 2): 1e10})
    done = mgbench("project", str(apart), "--gpus", "8", "--interconnect", "nvlink4", PYTHONWARNINGS="error")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    [series] = strict_json(apart / "projection.json")["series"]
    one, two = (point["efficiency"] for point in series["measured"])
    assert one == pytest.approx(1.0) and two is None
    assert "Projected scaling" in (apart / "report.html").read_text()


def test_the_page_lists_runs_in_the_compact_tables_order_and_links_each_chart_to_its_png(tmp_path, drawn):
    """Rows written dp, gloo, ddp (alphabetically ddp, dp, gloo), each on 2 devices before 1 but
    ddp's, ranked on 2 devices gloo (380 img/s), ddp (190), dp (60): the compact table, "Every run", the runs' details and the side-by-side charts
    all list gloo, ddp, dp, each line's runs by device count. Every chart links to its PNG under
    charts/; the every-run utilisation chart's smallest text is 9 px or more on a 390 px phone
    showing it across; one run is "1 run"."""
    rates = {("dp", 2): 60.0, ("dp", 1): 50.0, ("gloo", 2): 380.0, ("gloo", 1): 200.0, ("ddp", 1): 100.0}
    folder = rated_folder(tmp_path, {**rates, ("ddp", 2): 190.0})
    page = write_report(folder).read_text()
    ranked = ["gloo-1", "gloo-2", "ddp-1", "ddp-2", "dp-1", "dp-2"]
    ids = [f"pytorch-{name}cuda" for name in ranked]
    labels = [f"pytorch {name.replace('-', ' x')}" for name in ranked]
    table = page[page.index('id="compact"') :]
    compact = re.findall(r'data-label="strategy">(\w+)<', table[: table.index("</table>")])
    assert compact == ["gloo", "ddp", "dp"]
    assert re.findall(r'<tr id="row-([\w-]+)"', page) == ids
    assert re.findall(r'<details class="run" id="run-([\w-]+)"', page) == ids
    every_run = next(figure for figure in drawn if "of every run" in figure._suptitle.get_text())
    assert [axes.get_ylabel().splitlines()[0] for axes in every_run.axes] == labels
    beside = next(figure for figure in drawn if "per run" in figure._suptitle.get_text())
    assert [text.get_text() for text in beside.axes[0].get_yticklabels()] == labels
    images = re.findall(r'<a href="(charts/[\w.-]+\.png)"><img', page)
    assert len(images) == page.count("<img") and all((folder / image).is_file() for image in images)
    width = every_run.get_figwidth() * every_run.dpi
    sizes = [text.get_fontsize() * every_run.dpi / 72 * 390 / width for text in every_run.findobj(Text)]
    assert min(size for size in sizes) >= 9, min(sizes)
    one = rated_folder(tmp_path / "one", {("ddp", 1): 100.0})
    assert ", 1 run, report generated" in write_report(one).read_text()


def test_one_run_is_said_in_the_singular():
    """The same-start sentence of one run set against its reference: `1 run`, never `1 runs`."""
    from test_same_start_check import row

    from mgbench.reports.same_start import same_start

    sentence = same_start(pd.DataFrame([row("pytorch"), row("gluon")])).sentence()
    assert "the first-step losses of 1 run agree" in sentence and "1 runs" not in sentence
