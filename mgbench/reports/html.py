"""`report.html`: one self-contained page per run folder (charts inlined, no external assets).

The page is meant to be mailed or attached to a ticket and opened offline, so charts are
embedded as base64 data URIs and the CSS is inline. Every value written into the page goes
through `html.escape`: errors and commands come from subprocess output and may hold anything.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mgbench.common.config import RunConfig
from mgbench.common.runfolder import CHARTS_DIR, RunFolder
from mgbench.reports.charts import Chart, ChartSet, write_charts
from mgbench.reports.compact import CompactSummary, compact_summary, shown_columns
from mgbench.reports.figures import job_title
from mgbench.reports.projection import PROJECTION_COLUMNS, read_projection, series_notes, series_rows, series_title
from mgbench.reports.readings import breakdown_text, limits_details, reading
from mgbench.reports.runfolder import RunFolderData, load_run_folder
from mgbench.reports.same_start import same_start_sentence
from mgbench.reports.summary import TABLE_COLUMNS, display_table
from mgbench.reports.training import COLUMNS as TRAINING_COLUMNS
from mgbench.reports.training import training_table
from mgbench.reports.verdict import verdict

HOST_FIELDS = ("hostname", "platform", "python", "mgbench", "cpu_count", "memory_total_gib", "driver", "cuda_driver")
GPU_FIELDS = (
    "index",
    "name",
    "memory_total_mib",
    "sm_clock_mhz",
    "sm_clock_max_mhz",
    "mem_clock_mhz",
    "mem_clock_max_mhz",
)
RUN_FIELDS = ("command", "interpreter", "started_at", "wall_seconds", "device_names", "parameters", "eval_metrics")
CONFIG_FIELDS = tuple(RunConfig.__dataclass_fields__)

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 1.2rem auto;
       max-width: 1200px; padding: 0 1rem; color: #1d2430; line-height: 1.45; }
h1 { font-size: 1.6rem; margin-bottom: 0.2rem; }
h2 { border-bottom: 2px solid #d6dbe3; padding-bottom: 0.2rem; margin-top: 2.2rem; }
h3 { margin-top: 1.6rem; }
.meta { color: #5a6472; font-size: 0.9rem; }
.meta code { word-break: break-all; }
table { border-collapse: collapse; margin: 0.6rem 0; font-size: 0.9rem; }
th, td { border: 1px solid #d6dbe3; padding: 0.3rem 0.6rem; text-align: left; vertical-align: top; }
th { background: #eef1f5; }
tr.ok td.status { color: #1a7f37; font-weight: 600; }
tr.problem td { background: #fff4f2; }
tr.problem td.status { color: #b42318; font-weight: 600; }
table.summary td { white-space: nowrap; }
table.summary td.status { white-space: normal; min-width: 6rem; }
table.summary td.link { white-space: normal; }
table.summary td.wrap { white-space: normal; min-width: 12rem; }
td { overflow-wrap: anywhere; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.notes { background: #fff8e1; border-left: 4px solid #f2b600; padding: 0.5rem 1rem; }
pre { background: #f6f8fa; border: 1px solid #d6dbe3; padding: 0.6rem; overflow-x: auto;
      font-size: 0.8rem; max-height: 22rem; }
figure { margin: 1rem 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #e3e7ee; }
figcaption { color: #5a6472; font-size: 0.85rem; }
section.run { border-top: 1px solid #e3e7ee; }
p.verdict { font-size: 1.15rem; margin: 0.6rem 0; }
table.compact th { text-align: right; }
table.compact th:first-child, table.compact th:nth-child(2) { text-align: left; }
table.compact td { white-space: nowrap; }
ol.notes-list { font-size: 0.85rem; color: #3d4654; margin-top: 0.2rem; }
"""
DETAILS = "details"
"""The "Every run" column linking each row to its run's details."""
NUMERIC_COLUMNS = {"devices", "images/sec", "p10-p90", "speedup", "efficiency"}
COLUMN_CLASSES = {
    **dict.fromkeys(NUMERIC_COLUMNS, "num"),
    "status": "status",
    "what holds it back": "wrap",
    DETAILS: "link",
}
"""Summary cells styled by their column: numbers right-aligned, sentences and links wrapped."""
COMPARED = (
    "framework",
    "strategy",
    "devices",
    "device_kind",
    "status",
    "images_per_sec",
    "spread",
    "speedup",
    "efficiency",
    "reading",
)
"""The `summary.TABLE_COLUMNS` a reader compares across runs, kept in "Every run" so that it fits
a 1280-px window; the row's other figures (warm-up, start-up, memory, warning, ...) are in its
run's details, which the row links to."""


@dataclass(frozen=True)
class Link:
    """A cell linking to a place on the page: the text is escaped, the target an id the page made."""

    text: str
    target: str

    def html(self) -> str:
        return f'<a href="#{_e(self.target)}">{_e(self.text)}</a>'


def _e(value: object) -> str:
    """Escaped text; floats that hold a count (pandas turns int columns with gaps into float) print as ints."""
    if isinstance(value, float):
        value = int(value) if value.is_integer() else f"{value:.6g}"
    return html.escape("" if value is None else str(value))


def _table(
    header: Sequence[str], rows: Iterable[Sequence[object]], row_attrs: Iterable[str] | None = None, css_class: str = ""
) -> str:
    """An escaped table; `row_attrs` holds each row's (already escaped) `<tr>` attributes."""
    rows = list(rows)
    attrs = list(row_attrs) if row_attrs is not None else [""] * len(rows)
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = []
    for cells, attr in zip(rows, attrs):
        tds = []
        for name, cell in zip(header, cells):
            cls = COLUMN_CLASSES.get(name, "")
            content = cell.html() if isinstance(cell, Link) else _e(cell)
            tds.append(f'<td class="{cls}">{content}</td>' if cls else f"<td>{content}</td>")
        body.append(f"<tr{attr}>{''.join(tds)}</tr>")
    return f'<table class="{css_class}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _is_blank(value: object) -> bool:
    if isinstance(value, (list, dict, str)):
        return len(value) == 0
    return value is None or bool(pd.isna(value))


def _key_values(pairs: Iterable[tuple[str, object]]) -> str:
    return _table(("field", "value"), [(k, v) for k, v in pairs if not _is_blank(v)])


def _image(chart: Chart) -> str:
    encoded = base64.b64encode(chart.path.read_bytes()).decode("ascii")
    return (
        f'<figure><img alt="{_e(chart.title)}" src="data:image/png;base64,{encoded}">'
        f"<figcaption>{_e(chart.title)} ({_e(CHARTS_DIR + '/' + chart.path.name)})</figcaption></figure>"
    )


def _answer_section(summary: CompactSummary) -> str:
    """The first screen: the verdict, then one line per framework/strategy and the numbered notes."""
    columns = shown_columns(summary)
    head = "".join(f"<th>{'<br>'.join(_e(part) for part in c.header.splitlines())}</th>" for c in columns)
    body = []
    for _, cells in summary.cells.iterrows():
        tds = "".join(f'<td class="{"num" if c.numeric else ""}">{_e(cells[c.key])}</td>' for c in columns)
        body.append(f"<tr>{tds}</tr>")
    table = f'<table class="compact" id="compact"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
    notes = "".join(f"<li>{_e(note)}</li>" for note in summary.notes)
    return (
        f'<p class="verdict" id="verdict">{_e(verdict(summary))}</p>'
        + table
        + (f'<ol class="notes-list">{notes}</ol>' if notes else "")
    )


def _same_start_paragraph(frame: pd.DataFrame) -> str:
    """Whether the frameworks started from one point and took the same first step (`same_start`)."""
    sentence = same_start_sentence(frame)
    return f'<p class="same-start" id="same-start">{_e(sentence)}</p>' if sentence else ""


def _split_summary(shown: pd.DataFrame) -> tuple[list[str], list[str]]:
    """`display_table`'s columns as (those "Every run" keeps, `COMPARED`; those each run's details
    show): a column the table gains later goes to the details, never widening the table."""
    compared = [TABLE_COLUMNS[key] for key in COMPARED if TABLE_COLUMNS[key] in shown.columns]
    return compared, [column for column in shown.columns if column not in compared]


def _summary_section(frame: pd.DataFrame, compared: pd.DataFrame, details: pd.DataFrame) -> str:
    """Every run's compared figures, one row each, linking to the run's details (where a row
    with a warning says so in its link)."""
    attrs, rows = [], []
    for (_, row), cells, (_, extra) in zip(frame.iterrows(), compared.itertuples(index=False), details.iterrows()):
        state = "ok" if row["status"] == "ok" else "problem"
        attrs.append(f' id="row-{_e(row["run_id"])}" class="{state}" data-run-id="{_e(row["run_id"])}"')
        warned = bool(extra.get(TABLE_COLUMNS["warning"]))
        rows.append([*cells, Link(f"{DETAILS} (warning)" if warned else DETAILS, f"run-{row['run_id']}")])
    return "<h2>Every run</h2>" + _table([*compared.columns, DETAILS], rows, attrs, "summary")


def _training_section(frame: pd.DataFrame) -> str:
    """Time to train N epochs and the test split's metrics, when rows trained in epochs."""
    table = training_table(frame)
    if table.empty:
        return ""
    header = list(TRAINING_COLUMNS.values())
    rows = [[_fixed(value) for value in line] for line in table.itertuples(index=False)]
    return f"<h2>Time to train</h2>{_table(header, rows)}"


def _fixed(value: object) -> object:
    """Whole numbers as such, metrics (at most 1) to three decimals, times and rates to one; NaN blank."""
    if isinstance(value, float):
        if np.isnan(value):
            return ""
        if value.is_integer():
            return int(value)
        return f"{value:.3f}" if value <= 1 else f"{value:.1f}"
    return value


def _environment_section(frame: pd.DataFrame) -> str:
    """Each distinct host once (rows measured on the same machine share it), then framework versions."""
    parts = ["<h2>Environment</h2>"]
    hosts: dict[str, dict[str, Any]] = {}
    for environment in frame["environment"]:
        if isinstance(environment, dict) and environment:
            hosts.setdefault(str(environment.get("hostname")), environment)
    if not hosts:
        parts.append("<p>No run recorded its environment (only successful runs do).</p>")
    for environment in hosts.values():
        parts.append(f"<h3>Host {_e(environment.get('hostname'))}</h3>")
        parts.append(_key_values((name, environment.get(name)) for name in HOST_FIELDS))
        gpus = environment.get("gpus") or []
        if gpus:
            parts.append(_table(GPU_FIELDS, [[gpu.get(name) for name in GPU_FIELDS] for gpu in gpus]))
        else:
            parts.append("<p>No NVIDIA GPU visible on this host: CPU devices stood in for GPUs.</p>")
    versions = []
    for _, row in frame.iterrows():
        if isinstance(row["framework_versions"], dict) and row["framework_versions"]:
            text = ", ".join(f"{k} {v}" for k, v in row["framework_versions"].items())
            versions.append((row["framework"], row["strategy"], text, row["interpreter"]))
    if versions:
        parts.append("<h3>Framework versions</h3>")
        parts.append(_table(("framework", "strategy", "versions", "interpreter"), dict.fromkeys(versions)))
    return "".join(parts)


def profiler_slowdown(profile: object) -> str:
    """`1.40x`: how much longer the profiled steps ran than the timed ones (the breakdown's shares
    are of the timed step); "" where the row has no such figure."""
    slowdown = profile.get("window_slowdown") if isinstance(profile, dict) else None
    return f"{slowdown:.2f}x" if isinstance(slowdown, int | float) else ""


def _run_section(row: pd.Series, figures: pd.Series, charts: ChartSet) -> str:
    """The run's details: the summary figures "Every run" leaves out (`figures`), its config, how
    it ran, what holds it back, and its own charts."""
    run_id = row["run_id"]
    parts = [f'<section class="run" id="run-{_e(run_id)}"><h3>{_e(run_id)}: {_e(row["status"])}</h3>']
    if row["status"] != "ok" and row["error"]:
        parts.append(f"<pre>{_e(row['error'])}</pre>")
    config = [(name, row[name]) for name in CONFIG_FIELDS] + [("global_batch", row["global_batch"])]
    profiled = [
        ("what holds it back", reading(row)),
        ("breakdown", breakdown_text(row.get("breakdown"))),
        ("breakdown_clock", row.get("breakdown_clock")),
        ("profile_seconds", row.get("profile_seconds")),
        ("profiler slowdown of the step", profiler_slowdown(row.get("profile"))),
        *limits_details(row),
    ]
    parts.append(_key_values([*figures.items(), *config, *((name, row[name]) for name in RUN_FIELDS), *profiled]))
    parts.extend(_image(chart) for chart in charts.runs.get(run_id, []))
    parts.extend(f'<p class="meta">{_e(note)}</p>' for note in charts.notes.get(run_id, []))
    parts.append("</section>")
    return "".join(parts)


def _projection_section(projection: dict[str, Any], chart: Chart) -> str:
    """What `mgbench project` modelled past this machine, said to be a model."""
    parts = [
        "<h2>Scaling past this machine (projected)</h2>",
        f'<p class="meta">A model, not a measurement. Assumptions: {_e(projection["assumptions"])}</p>',
    ]
    for series in projection["series"]:
        parts.append(f"<h3>{_e(series_title(series))}</h3>")
        parts.append(_table(PROJECTION_COLUMNS, series_rows(series)))
        parts.extend(f'<p class="meta">{_e(note)}</p>' for note in series_notes(series))
    parts.append(_image(chart))
    return "".join(parts)


def render_report(data: RunFolderData, charts: ChartSet) -> str:
    title = f"mgbench report: {job_title(data.frame)}"
    generated = datetime.now().strftime("%Y-%m-%d %H:%M")
    parts = [
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>',
        f"<style>{STYLE}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        _answer_section(compact_summary(data.frame)),
        _same_start_paragraph(data.frame),
        f'<p class="meta">Run folder <code>{_e(data.root.name)}</code>, {len(data.frame)} runs, report generated {generated}.',
    ]
    if data.command:
        parts.append(f"<br>Command: <code>{_e(data.command)}</code>")
    parts.append("</p>")
    if data.notes:
        parts.append('<div class="notes">' + "".join(f"<p>{_e(n)}</p>" for n in data.notes) + "</div>")
    shown = display_table(data.frame)
    compared, details = _split_summary(shown)
    parts.append(_summary_section(data.frame, shown[compared], shown[details]))
    parts.append(_training_section(data.frame))
    if charts.compare:
        parts.append("<h2>Charts</h2>" + "".join(_image(chart) for chart in charts.compare))
    else:
        parts.append("<h2>Charts</h2><p>No run finished successfully: nothing to compare.</p>")
    projection = read_projection(data.root)
    if charts.projection is not None and projection is not None:
        parts.append(_projection_section(projection, charts.projection))
    parts.append(_environment_section(data.frame))
    runs = zip(data.frame.iterrows(), shown[details].iterrows())
    parts.append("<h2>Runs</h2>" + "".join(_run_section(row, figures, charts) for (_, row), (_, figures) in runs))
    parts.append("</body></html>\n")
    return "".join(parts)


def write_report(root: Path) -> Path:
    """Charts into `root/charts/`, then `root/report.html`; raises UsageError if `root` is no run folder."""
    data = load_run_folder(root)
    charts = write_charts(data)
    folder = RunFolder(root)
    return folder.write(folder.report, render_report(data, charts))
