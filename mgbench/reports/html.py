"""`report.html`: one self-contained page per run folder (charts inlined, no external assets).

The page is meant to be mailed or attached to a ticket and opened offline, so charts are
embedded as base64 data URIs and the CSS is inline. It fits any screen without scrolling
sideways: on a phone's width every table shows each row as a card, a cell a line named by its
header (`data-label`), and each run's details are folded behind its name. Every value written
into the page goes through `html.escape`: errors and commands come from subprocess output and
may hold anything.
"""

from __future__ import annotations

import base64
import html
import io
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from PIL import Image

from mgbench.core.config import COLUMNS
from mgbench.core.inputs import RateUnit
from mgbench.core.wording import counted
from mgbench.projection.calibration import read_projection
from mgbench.records.runfolder import CHARTS_DIR, RunFolder
from mgbench.reports.cells import MISSING, number, run_label
from mgbench.reports.charts import Chart, ChartSet, write_charts
from mgbench.reports.columns import Col
from mgbench.reports.compact import Column, CompactSummary, compact_summary, shown_columns
from mgbench.reports.figures import job_title
from mgbench.reports.folder_data import RunFolderData, load_run_folder
from mgbench.reports.projection_table import projection_columns, series_notes, series_rows, series_title
from mgbench.reports.readings import breakdown_text, held_back_cells, limits_details, reading
from mgbench.reports.row_order import in_line_order
from mgbench.reports.same_start import same_start_sentence
from mgbench.reports.summary import TABLE_COLUMNS, display_table, table_headers
from mgbench.reports.training import headers as training_headers
from mgbench.reports.training import training_table
from mgbench.reports.units import frame_unit
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
VIEWPORT = '<meta name="viewport" content="width=device-width, initial-scale=1">'
"""Lays the page out at the device's width, which a phone would otherwise render at 980 px and shrink."""
RUN_FIELDS = ("command", "interpreter", "started_at", "wall_seconds", "device_names", "parameters", "eval_metrics")

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 1.2rem auto;
       max-width: 1200px; padding: 0 1rem; color: #1d2430; line-height: 1.45; }
h1 { font-size: 1.6rem; margin-bottom: 0.2rem; overflow-wrap: anywhere; }
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
table.summary td.link { white-space: normal; overflow-wrap: normal; }
table.summary td.wrap { white-space: normal; min-width: 9rem; }
td { overflow-wrap: anywhere; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.notes { background: #fff8e1; border-left: 4px solid #f2b600; padding: 0.5rem 1rem; }
pre { background: #f6f8fa; border: 1px solid #d6dbe3; padding: 0.6rem; overflow-x: auto;
      font-size: 0.8rem; max-height: 22rem; }
figure { margin: 1rem 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #e3e7ee; }
figcaption { color: #5a6472; font-size: 0.85rem; }
details.run { border-top: 1px solid #e3e7ee; padding: 0.3rem 0; }
details.run > summary { cursor: pointer; font-weight: 600; }
.side-by-side { display: flex; flex-wrap: wrap; gap: 1rem; }
.side-by-side figure { min-width: 18rem; margin: 0; }
p.all-runs { font-size: 0.9rem; }
p.verdict { font-size: 1.15rem; margin: 0.6rem 0; }
table.compact th { text-align: right; }
table.compact th:first-child, table.compact th:nth-child(2) { text-align: left; }
table.compact td.num, table.compact td:first-child, table.compact td:nth-child(2) { white-space: nowrap; }
table.compact td { overflow-wrap: normal; }
table.compact td.breaks { white-space: normal; }
table.compact th, table.compact td { padding: 0.3rem 0.4rem; }
ol.notes-list { font-size: 0.85rem; color: #3d4654; margin-top: 0.2rem; }
@media (max-width: 40rem) {
  body { padding: 0 0.5rem; }
  table, tbody, tr, td { display: block; }
  thead { display: none; }
  tr { border: 1px solid #d6dbe3; margin: 0.4rem 0; padding: 0.2rem 0; }
  td, table.compact td, table.summary td { border: none; padding: 0.1rem 0.5rem; white-space: normal;
       text-align: left; }
  td[data-label]::before { content: attr(data-label) ": "; color: #5a6472; }
}
"""
DETAILS = "details"
"""The "Every run" column linking each row to its run's details."""
NUMERIC_COLUMNS = {"devices", "images/sec", "range", "p10-p90", "speedup", "efficiency"}
NUMERIC_KEYS = ("devices", "samples_per_sec", "interval", "spread", "per_device", "mfu", "speedup", "efficiency")
"""The `summary.TABLE_COLUMNS` that hold numbers, whatever their header (a rate's is its model's unit)."""
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
    "samples_per_sec",
    "interval",
    "spread",
    "speedup",
    "efficiency",
    "utilisation",
    "reading",
)
"""The `summary.TABLE_COLUMNS` a reader compares across runs, kept in "Every run" so that it fits
a 1280-px window (the steady rate's range fits; its rounds do not, and are in the details); the
row's other figures (rounds, warm-up, stalls, start-up, memory, warning, ...) are in its run's
details, which the row links to."""


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
    header: Sequence[str],
    rows: Iterable[Sequence[object]],
    row_attrs: Iterable[str] | None = None,
    css_class: str = "",
    labelled: bool = True,
    classes: dict[str, str] = COLUMN_CLASSES,
) -> str:
    """An escaped table, its values as a person reads them (`_readable`); `row_attrs` holds each
    row's (already escaped) `<tr>` attributes. Each cell is `labelled` with its header, which a
    phone's width shows in front of it (a two-column table of names and values needs none);
    `classes` styles a column by its header."""
    rows = list(rows)
    attrs = list(row_attrs) if row_attrs is not None else [""] * len(rows)
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = []
    for cells, attr in zip(rows, attrs):
        tds = []
        for name, cell in zip(header, cells):
            cls = classes.get(name, "")
            content = cell.html() if isinstance(cell, Link) else _e(_readable(cell))
            styled = (f' class="{cls}"' if cls else "") + (f' data-label="{_e(name)}"' if labelled else "")
            tds.append(f"<td{styled}>{content}</td>")
        body.append(f"<tr{attr}>{''.join(tds)}</tr>")
    return f'<table class="{css_class}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _readable(value: object) -> object:
    """A value as a person reads it: a mapping as `name value, ...` and a list joined by commas,
    the numbers in them to four significant figures; anything else as it is (`_e` prints it)."""
    if isinstance(value, dict):
        return ", ".join(f"{key} {_item(item)}" for key, item in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(_item(item) for item in value)
    return value


def _item(value: object) -> str:
    """One value inside a mapping or a list (`_readable`)."""
    if isinstance(value, float) and math.isfinite(value):
        return f"{value:.4g}"
    return str(_readable(value))


def _is_blank(value: object) -> bool:
    """Nothing to show: empty, null, NaN, or the dash a table shows for a figure without a value."""
    if isinstance(value, (list, dict, str)):
        return len(value) == 0 or value == MISSING
    return value is None or bool(pd.isna(value))


def _key_values(pairs: Iterable[tuple[str, object]]) -> str:
    return _table(("field", "value"), [(k, v) for k, v in pairs if not _is_blank(v)], labelled=False)


def _image(chart: Chart, grow: bool = False) -> str:
    """The chart inlined, linking to its PNG in `charts/` at full size; `grow`: in a row of
    charts, taking room in proportion to its width."""
    data = chart.path.read_bytes()
    encoded = base64.b64encode(data).decode("ascii")
    with Image.open(io.BytesIO(data)) as image:
        style = f' style="flex: {image.width} 1 0"' if grow else ""
    full_size = _e(CHARTS_DIR + "/" + chart.path.name)  # beside report.html: a phone zooms into it
    return (
        f'<figure{style}><a href="{full_size}"><img alt="{_e(chart.title)}" src="data:image/png;base64,{encoded}"></a>'
        f'<figcaption>{_e(chart.title)} (<a href="{full_size}">{full_size}</a>)</figcaption></figure>'
    )


def _compact_class(column: Column) -> str:
    """A compact cell's classes: `num` right-aligns it on one line, `breaks` lets it break where
    its column allows (`Column.breaks_after`)."""
    return " ".join(name for name, wanted in (("num", column.numeric), ("breaks", column.breaks_after)) if wanted)


def _breakable(text: str, column: Column) -> str:
    """The escaped cell with a break opportunity (`<wbr>`) after each of its column's `breaks_after`."""
    escaped = _e(text)
    for character in column.breaks_after:
        escaped = escaped.replace(character, f"{character}<wbr>")
    return escaped


def _answer_section(summary: CompactSummary) -> str:
    """The first screen: the verdict, then one line per framework/strategy and the numbered notes."""
    columns = shown_columns(summary)
    head = "".join(f"<th>{'<br>'.join(_e(part) for part in c.header.splitlines())}</th>" for c in columns)
    labels = {c.key: " ".join(c.header.splitlines()) for c in columns}
    body = []
    for _, cells in summary.cells.iterrows():
        tds = "".join(
            f'<td class="{_compact_class(c)}" data-label="{_e(labels[c.key])}">{_breakable(cells[c.key], c)}</td>'
            for c in columns
        )
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


def _split_summary(shown: pd.DataFrame, headers: dict[str, str]) -> tuple[list[str], list[str]]:
    """`display_table`'s columns (named by `headers`) as (those "Every run" keeps, `COMPARED`;
    those each run's details show): a column the table gains later goes to the details, never
    widening the table."""
    compared = [headers[key] for key in COMPARED if headers[key] in shown.columns]
    return compared, [column for column in shown.columns if column not in compared]


def _varying(table: pd.DataFrame) -> tuple[pd.DataFrame, list[tuple[str, object]]]:
    """The table without the columns that tell its rows nothing apart: those empty in every row
    are left out, and where it has several rows, those holding one value in every row are
    returned as (header, value) to be said once above it."""
    shared, kept = [], []
    for column in table.columns:
        values = table[column].map(_readable)
        if values.map(_is_blank).all():
            continue
        if len(table) > 1 and values.nunique(dropna=False) == 1:
            shared.append((str(column), values.iloc[0]))
        else:
            kept.append(column)
    return table[kept], shared


def _said_once(shared: list[tuple[str, object]]) -> str:
    """What every row of the table under it holds, in one line."""
    if not shared:
        return ""
    return '<p class="all-runs">Every row: ' + "; ".join(f"{_e(name)} {_e(value)}" for name, value in shared) + "</p>"


def _summary_section(frame: pd.DataFrame, compared: pd.DataFrame, warnings: pd.Series) -> str:
    """Every run's compared figures, one row each (what all rows share said once above them),
    linking to the run's details, where a row with a warning says so in its link; what holds a
    run back is a short label whose explanation is a footnote under the table, said once."""
    header = TABLE_COLUMNS["reading"]
    cells, footnotes = held_back_cells(frame)
    if header in compared:
        compared = compared.assign(**{header: cells})
    table, shared = _varying(compared)
    attrs, rows = [], []
    for (_, row), cells, warned in zip(frame.iterrows(), table.itertuples(index=False), warnings):
        state = "ok" if row[Col.STATUS] == "ok" else "problem"
        attrs.append(f' id="row-{_e(row[Col.RUN_ID])}" class="{state}" data-run-id="{_e(row[Col.RUN_ID])}"')
        rows.append([*cells, Link(f"{DETAILS} (warning)" if warned else DETAILS, f"run-{row[Col.RUN_ID]}")])
    said = "".join(f"<li>{_e(footnote)}</li>" for footnote in footnotes) if header in compared else ""
    notes = f'<ol class="notes-list" type="a">{said}</ol>' if said else ""
    headers = table_headers(frame)
    classes = {**COLUMN_CLASSES, **{headers[key]: "num" for key in NUMERIC_KEYS}}
    summary = _table([*table.columns, DETAILS], rows, attrs, "summary", classes=classes)
    return "<h2>Every run</h2>" + _said_once(shared) + summary + notes


def _training_section(frame: pd.DataFrame) -> str:
    """Time to train N epochs and the test split's metrics, when rows trained in epochs."""
    lines = training_table(frame)
    if lines.empty:
        return ""
    named = lines.map(_fixed).rename(columns=training_headers(frame))
    table, shared = _varying(named)
    return f"<h2>Time to train</h2>{_said_once(shared)}{_table(list(table.columns), table.itertuples(index=False))}"


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
    for environment in frame[Col.ENVIRONMENT]:
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
        if isinstance(row[Col.FRAMEWORK_VERSIONS], dict) and row[Col.FRAMEWORK_VERSIONS]:
            text = ", ".join(f"{k} {v}" for k, v in row[Col.FRAMEWORK_VERSIONS].items())
            versions.append((row[Col.FRAMEWORK], row[Col.STRATEGY], text, row[Col.INTERPRETER]))
    if versions:
        parts.append("<h3>Framework versions</h3>")
        parts.append(_table(("framework", "strategy", "versions", "interpreter"), dict.fromkeys(versions)))
    return "".join(parts)


def profiler_slowdown(profile: object) -> str:
    """`1.40x`: how much longer the profiled steps ran than the timed ones (the breakdown's shares
    are of the timed step); "" where the row has no such figure."""
    slowdown = profile.get("window_slowdown") if isinstance(profile, dict) else None
    return f"{slowdown:.2f}x" if isinstance(slowdown, int | float) else ""


def _config_fields(row: pd.Series) -> list[str]:
    """The config fields a run's details show: an `--epochs` run's `steps` is not what it ran."""
    return [name for name in COLUMNS if not (name == "steps" and number(row.get(Col.EPOCHS)))]


def _run_section(row: pd.Series, figures: pd.Series, charts: ChartSet) -> str:
    """The run's details, folded behind its name: the summary figures "Every run" leaves out
    (`figures`), its config, how it ran, what holds it back, and its own charts."""
    run_id = row[Col.RUN_ID]
    warned = " (warning)" if figures.get(TABLE_COLUMNS["warning"]) else ""
    parts = [
        f'<details class="run" id="run-{_e(run_id)}">'
        f"<summary>{_e(run_label(row))}: {_e(row[Col.STATUS])}{warned}</summary>"
    ]
    if row[Col.STATUS] != "ok" and row[Col.ERROR]:
        parts.append(f"<pre>{_e(row[Col.ERROR])}</pre>")
    config = [(name, row[name]) for name in _config_fields(row)] + [("global_batch", row[Col.GLOBAL_BATCH])]
    profiled = [
        ("what holds it back", reading(row)),
        ("breakdown", breakdown_text(row.get(Col.BREAKDOWN))),
        ("breakdown_clock", row.get(Col.BREAKDOWN_CLOCK)),
        ("profile_seconds", row.get(Col.PROFILE_SECONDS)),
        ("profiler slowdown of the step", profiler_slowdown(row.get(Col.PROFILE))),
        *limits_details(row),
    ]
    fields = [("run", run_id), *figures.items(), *config, *((name, row[name]) for name in RUN_FIELDS), *profiled]
    parts.append(_key_values(fields))
    parts.extend(_image(chart) for chart in charts.runs.get(run_id, []))
    parts.extend(f'<p class="meta">{_e(note)}</p>' for note in charts.notes.get(run_id, []))
    parts.append("</details>")
    return "".join(parts)


def _projection_section(projection: dict[str, Any], chart: Chart, unit: RateUnit) -> str:
    """What `mgbench project` modelled past this machine, said to be a model, its rates in `unit`."""
    parts = [
        "<h2>Scaling past this machine (projected)</h2>",
        f'<p class="meta">A model, not a measurement. Assumptions: {_e(projection["assumptions"])}</p>',
    ]
    for series in projection["series"]:
        parts.append(f"<h3>{_e(series_title(series))}</h3>")
        parts.append(_table(projection_columns(unit), series_rows(series, unit)))
        parts.extend(f'<p class="meta">{_e(note)}</p>' for note in series_notes(series, unit))
    parts.append(_image(chart))
    return "".join(parts)


def _side_by_side_section(charts: ChartSet) -> str:
    """Every run's utilisation on one time axis, beside throughput against utilisation per run:
    each chart as wide as its share of the charts' pixels, the two one under the other where the
    page is too narrow for both."""
    if not charts.side_by_side:
        return ""
    figures = "".join(_image(chart, grow=True) for chart in charts.side_by_side)
    return f'<h2>Utilisation side by side</h2><div class="side-by-side">{figures}</div>'


def render_report(data: RunFolderData, charts: ChartSet) -> str:
    """The page: every table and run listed in one order, the compact table's (`in_line_order`)."""
    data = replace(data, frame=in_line_order(data.frame))
    title = f"mgbench report: {job_title(data.frame)}"
    generated = datetime.now().strftime("%Y-%m-%d %H:%M")
    parts = [
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">{VIEWPORT}<title>{_e(title)}</title>',
        f"<style>{STYLE}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        _answer_section(compact_summary(data.frame)),
        _same_start_paragraph(data.frame),
        f'<p class="meta">Run folder <code>{_e(data.root.name)}</code>, {counted(len(data.frame), "run")}, report generated {generated}.',
    ]
    if data.command:
        parts.append(f"<br>Command: <code>{_e(data.command)}</code>")
    parts.append("</p>")
    if data.notes:
        parts.append('<div class="notes">' + "".join(f"<p>{_e(n)}</p>" for n in data.notes) + "</div>")
    headers = table_headers(data.frame)
    shown = display_table(data.frame)
    compared, details = _split_summary(shown, headers)
    warnings = shown.get(headers["warning"], pd.Series("", index=shown.index))
    parts.append(_summary_section(data.frame, shown[compared], warnings))
    parts.append(_side_by_side_section(charts))
    parts.append(_training_section(data.frame))
    if charts.compare:
        parts.append("<h2>Charts</h2>" + "".join(_image(chart) for chart in charts.compare))
    else:
        parts.append("<h2>Charts</h2><p>No run finished successfully: nothing to compare.</p>")
    projection = read_projection(data.root)
    if charts.projection is not None and projection is not None:
        parts.append(_projection_section(projection, charts.projection, frame_unit(data.frame)))
    parts.append(_environment_section(data.frame))
    runs = zip(data.frame.iterrows(), shown[details].iterrows())
    parts.append("<h2>Runs</h2>" + "".join(_run_section(row, figures, charts) for (_, row), (_, figures) in runs))
    parts.append("</body></html>\n")
    return "".join(parts)


def write_report(root: Path) -> Path:
    """Charts into `root/charts/`, then `root/report.html`; raises UsageError if `root` is no run folder."""
    return write_folder_report(load_run_folder(root), RunFolder(root))


def write_folder_report(data: RunFolderData, folder: RunFolder) -> Path:
    """The report of the run folder `data` was read from, its charts and `report.html` written
    into `folder`: the run folder itself, or another one (`report --out`), which leaves it as it was."""
    charts = write_charts(data, folder)
    return folder.write(folder.report, render_report(data, charts))
