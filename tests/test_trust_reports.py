"""`report` and `project` outputs a script or a colleague can trust: rates at the ends of a float's
range still give a report and a projection, JSON that is JSON, names shown as the OS shows them,
a dangling `--out` link refused."""

from __future__ import annotations

import json
import os
from pathlib import Path

from conftest import mgbench, one_line_error
from test_reports import BASE, ok_result, write_trace

from mgbench.records.results import RunResult, append_result
from mgbench.reports.compact import print_summary
from mgbench.reports.figures import job_title
from mgbench.reports.folder_data import load_run_folder


def rated_folder(root: Path, rates: dict[tuple[str, int], float], failed: bool = False) -> Path:
    """A run folder of ok rows, each `(strategy, devices)` at its steady rate in img/s (its step
    spread 1% either side, its interval 0.5%), with a trace each; a crashed row beside them where `failed`."""
    folder = root / "run"
    folder.mkdir(parents=True)
    for (strategy, devices), rate in rates.items():
        result = ok_result(BASE.with_changes(strategy=strategy, devices=devices), 0.2)
        record = {
            **result.to_record(),
            "images_per_sec": rate,
            "images_per_sec_p10": rate * 0.99,
            "images_per_sec_p90": rate * 1.01,
            "images_per_sec_low": rate * 0.995,
            "images_per_sec_high": rate * 1.005,
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
    `\\xff` (stdout in a UTF-8 locale), never a surrogate or a traceback."""
    folder = rated_folder(tmp_path, {("ddp", 1): 100.0})
    out = Path(os.fsdecode(bytes(tmp_path) + b"/r\xff"))
    done = mgbench("report", str(folder), "--out", str(out), LC_ALL="C.UTF-8", PYTHONIOENCODING="utf-8")
    assert done.returncode == 0, done.stderr
    assert (out / "report.html").is_file()
    assert done.stdout.splitlines()[-1] == f"{tmp_path}/r\\xff/report.html"
    clutter = Path(os.fsdecode(bytes(tmp_path) + b"/s\xfe"))
    clutter.mkdir()
    (clutter / "mine.txt").write_text("mine")
    error = one_line_error(mgbench("report", str(folder), "--out", str(clutter), LC_ALL="C.UTF-8"))
    assert f"--out {tmp_path}/s\\xfe holds other files (mine.txt)" in error


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
