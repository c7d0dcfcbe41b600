"""The compact summary: one line per framework/strategy, fastest first, that a reader takes in at a glance.

Fastest is by the compare's ranking (`ranking`): the rate for `--steps`; for `--epochs` the time
to train (to the target, with `--target-metric`), lines that did not finish or reach it last.
Each device count gets a group of columns (the ranked figure, with `--epochs` the test metric and
the steady rate beside it, and scaling efficiency above the smallest count), the ranked
figure shown to the precision its interval supports (`spread`) and, at the largest count, its
range; "vs fastest" sets each line's speed at the largest count against the fastest line's there,
or says `tie` where their intervals overlap; "start-up +compile s" the seconds before the first
timed step; "step" says what compiled each line's step where the lines differ in it; "holds back" is
the bottleneck label of that row's breakdown, or of its host timing where it was not profiled.
Everything that needs a sentence (a failure's cause, a warning, what a bottleneck means and what it
was read from, a hint) becomes a numbered note under the table, each said once, so no cell ever
has to fold. A table too wide for its terminal leaves columns out, the answers last, and says
under it which (`hidden_sentence`). The same summary prints as a rich table, Markdown, CSV or JSON.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from rich.console import Console
from rich.table import Table
from rich.text import Text

from mgbench.core.kinds import DeviceKind
from mgbench.reports.answer import answer
from mgbench.reports.cells import number, run_label
from mgbench.reports.columns import Col
from mgbench.reports.hints import EAGER, compile_hint, differ_in_compiling, step_kind
from mgbench.reports.ranking import Ranking, Throughput, line_spread, ranking_of
from mgbench.reports.readings import HOST_TIMING, HeldBack, held_back, line_held_back
from mgbench.reports.same_start import same_start_sentence
from mgbench.reports.summary import row_warnings, table_console
from mgbench.reports.units import model_sentences
from mgbench.reports.verdict import verdict

FORMATS = ("table", "md", "csv", "json")
RANGE = "range"
"""The column of the ranked figure's interval at the largest count (`Spread.range_text`)."""
TIE = "tie"
"""What "vs fastest" shows for a line whose interval overlaps the fastest line's: no ranking."""
GROUP = ["framework", "strategy"]
TABLE_PADDING = 3
"""Characters a rich table spends per column on borders and padding (plus one for the last border)."""


@dataclass(frozen=True)
class Column:
    """One column of the compact table: its header, how a line shows it, and how readily it is dropped
    when the table does not fit (a higher `drop_order` goes first; 0 never goes)."""

    header: str
    key: str
    numeric: bool
    drop_order: int
    breaks_after: str = ""
    """Characters after which a page may break a cell onto a second line, as it breaks the header:
    the `+` between start-up and compile seconds, the commas between note numbers; never inside a
    number (a terminal drops columns instead)."""


@dataclass
class CompactSummary:
    """The lines (one per framework/strategy, fastest first), their columns and the numbered notes."""

    title: str
    lines: pd.DataFrame
    """Raw values: framework, strategy, the ranking's figures per count (`<key>_<n>dev`:
    samples_per_sec, with `--epochs` time_to_train_seconds or time_to_target_seconds and
    target_epoch, test_auc or test_top1; the intervals `<key>_low_<n>dev`, `<key>_high_<n>dev` and
    `rounds_<n>dev`), scaling_efficiency_pct_<n>dev and speedup_<n>dev (the rows' own, `records.scaling`), vs_fastest_ratio, tie (its interval overlaps
    the fastest line's at the largest count), step (`hints.step_kind`), compile_hint, caveats
    (`caveats.Caveat.to_dict` with `where`), bottleneck, bottleneck_pct, bottleneck_source
    (`readings.DEVICE`, `CPU_TRACE`, `HOST_TIMING`; "" without one), startup_seconds and
    compile_seconds at the largest count, unmeasured (how its runs ended where none has a figure,
    `not-installed`; "" else), notes (note numbers)."""
    cells: pd.DataFrame
    """The same lines as display strings, one column per `Column.key`."""
    columns: list[Column]
    notes: list[str] = field(default_factory=list)
    on_gpus: bool = True
    """False where CPU devices stood in for GPUs."""
    ranking: Ranking = field(default_factory=Throughput)
    """What the lines are ranked by: throughput, or with `--epochs` time to train (to the target)."""
    counts: list[int] = field(default_factory=list)
    """The device counts, smallest first."""
    compiling: str | None = None
    """Where the lines differ in compiling their step, the sentence saying so (`hints`)."""
    mfu: str | None = None
    """For a language model's lines, the FLOPs their MFU counts and the peak it is over, and what
    their largest batch stands on (`units.model_sentences`)."""

    def to_records(self) -> list[dict[str, Any]]:
        """The lines as JSON-ready dicts (NaN as null; a count without a row holds nulls)."""
        return [
            {key: None if isinstance(value, float) and math.isnan(value) else value for key, value in line.items()}
            for line in self.lines.to_dict(orient="records")
        ]


def on_gpus(frame: pd.DataFrame) -> bool:
    """Whether the frame has rows and all of them ran on GPUs (the table then says `GPU`)."""
    kinds = {DeviceKind(kind) for kind in frame[Col.DEVICE_KIND]}
    return bool(kinds) and all(kind.on_gpu for kind in kinds)


@dataclass(frozen=True)
class Note:
    """A sentence under the table, and the run it is about (`framework strategy xN`; "" for one
    about no run, such as what a bottleneck means)."""

    text: str
    run: str = ""


class NoteBook:
    """Numbered notes, each sentence once: lines refer to them by number, and a sentence about
    several runs names them all, or says `every run` where it is about every run of the compare."""

    def __init__(self, runs: list[str]):
        self.runs = runs
        self.texts: list[str] = []
        self.about: dict[str, list[str]] = {}

    def number(self, note: Note) -> int:
        if note.text not in self.texts:
            self.texts.append(note.text)
        about = self.about.setdefault(note.text, [])
        if note.run and note.run not in about:
            about.append(note.run)
        return self.texts.index(note.text) + 1

    @property
    def notes(self) -> list[str]:
        return [self._said(text) for text in self.texts]

    def _said(self, text: str) -> str:
        about = self.about.get(text, [])
        if not about:
            return text
        if len(self.runs) > 1 and set(about) == set(self.runs):
            return f"every run: {text}"
        return f"{', '.join(about)}: {text}"


def _notes_of(group: pd.DataFrame, held: HeldBack | None, hint: str | None) -> list[Note]:
    """What a line's cells cannot say: each failure's cause, each warning (an out-of-memory restart's
    batch among them, which the row's own warnings word: `orchestrator.batch_warnings`), what its
    bottleneck means, and its hint."""
    notes = []
    for _, row in group.sort_values("devices").iterrows():
        where = run_label(row)
        if row[Col.STATUS] != "ok":
            cause = str(row.get(Col.ERROR) or "").splitlines()
            notes.append(Note(row[Col.STATUS] + (f": {cause[0]}" if cause and cause[0] else ""), where))
        else:
            notes += [Note(warning, where) for warning in row_warnings(row)]
    if held is not None:
        source = " (host timing, not profiled)" if held.source == HOST_TIMING else ""
        notes.append(Note(f"{held.label}{source}: {held.meaning}"))
    if hint:
        notes.append(Note(hint))
    return notes


def _caveats_of(group: pd.DataFrame) -> list[dict[str, str]]:
    """Each caveat of the line's rows (`caveats`), with where it is (`pytorch ddp x4`)."""
    return [
        {"where": run_label(row), **caveat.to_dict()}
        for _, row in group.sort_values("devices").iterrows()
        for caveat in (row.get(Col.CAVEATS) if isinstance(row.get(Col.CAVEATS), list) else [])
    ]


def compact_summary(frame: pd.DataFrame, title: str = "") -> CompactSummary:
    """The compact summary of a results frame (`mgbench.reports.summary.results_frame`)."""
    counts = sorted(int(d) for d in frame[Col.DEVICES].unique())
    top, word = counts[-1], "GPU" if on_gpus(frame) else "dev"
    ranking = ranking_of(frame, "GPU" if on_gpus(frame) else "device")
    lines = []
    for (framework, strategy), group in frame.groupby(GROUP, sort=False):
        by_count = {int(row[Col.DEVICES]): row for _, row in group.iterrows()}
        line: dict[str, object] = {"framework": framework, "strategy": strategy}
        for count in counts:
            row = by_count.get(count)
            ok = row is not None and row[Col.STATUS] == "ok"
            values = ranking.line_figures(row) if ok else {}
            for key in ranking.keys:
                line[f"{key}_{count}dev"] = values.get(key, math.nan)
            line[f"status_{count}dev"] = "" if row is None else str(row[Col.STATUS])
            if count != counts[0]:
                efficiency = float(row[Col.SCALING_EFFICIENCY_FRACTION]) if ok and row is not None else math.nan
                line[f"scaling_efficiency_pct_{count}dev"] = 100 * efficiency
                line[f"{Col.SPEEDUP}_{count}dev"] = float(row[Col.SPEEDUP]) if ok and row is not None else math.nan
        shown = by_count[top] if top in by_count else by_count[max(by_count)]
        held = held_back(shown)
        hint = compile_hint(run_label(shown), shown, held) if shown[Col.STATUS] == "ok" else None
        line["step"] = step_kind(shown) if shown[Col.STATUS] == "ok" else ""
        line["compile_hint"] = hint or ""
        line["caveats"] = _caveats_of(group)
        line["bottleneck"] = held.name if held else ""
        line["bottleneck_pct"] = 100 * held.fraction if held else math.nan
        line["bottleneck_source"] = held.source if held else ""
        line["startup_seconds"] = _seconds(shown, Col.STARTUP_SECONDS)
        line["compile_seconds"] = _seconds(shown, Col.COMPILE_SECONDS)
        statuses = [str(row[Col.STATUS]) for _, row in group.sort_values("devices").iterrows()]
        line["unmeasured"] = "" if "ok" in statuses else ", ".join(dict.fromkeys(statuses))
        line["notes"] = _notes_of(group, held, hint)
        lines.append(line)
    table = pd.DataFrame(lines)
    ranked = [f"{ranking.ranked}_{count}dev" for count in reversed(counts)]
    ascending = not ranking.descending
    table = table.sort_values(ranked, ascending=ascending, na_position="last", kind="stable").reset_index(drop=True)
    book = NoteBook([run_label(row) for _, row in frame.iterrows()])
    table["notes"] = [sorted({book.number(note) for note in notes}) for notes in table["notes"]]
    table["vs_fastest_ratio"] = ranking.vs_fastest(table[f"{ranking.ranked}_{top}dev"])
    table["tie"] = _ties(table, ranking, top)
    kinds = {f"{line['framework']} {line['strategy']}": line["step"] for _, line in table.iterrows() if line["step"]}
    compiling = differ_in_compiling(kinds)
    columns = _columns(counts, word, ranking)
    cells = pd.DataFrame(
        [_cells(line, counts, ranking, compiling is not None) for _, line in table.iterrows()],
        columns=[c.key for c in columns],
    )
    status_columns = [f"status_{count}dev" for count in counts]
    lines = table.drop(columns=status_columns)
    return CompactSummary(
        title, lines, cells, columns, book.notes, on_gpus(frame), ranking, counts, compiling, model_sentences(frame)
    )


def _seconds(row: pd.Series, column: Col) -> float:
    """An ok row's seconds of `column` (NaN where it has none: a failed row, an eager step's compile)."""
    value = number(row.get(column)) if row[Col.STATUS] == "ok" else None
    return math.nan if value is None else value


def _ties(table: pd.DataFrame, ranking: Ranking, top: int) -> list[bool]:
    """Whether each line (fastest first) ties with the fastest within noise at `top` devices: their
    intervals overlap (`Spread.ties`); the fastest itself does not count as a tie."""
    spreads = [line_spread(line, ranking.ranked, top) for _, line in table.iterrows()]
    first = spreads[0] if spreads else None
    return [
        index > 0 and first is not None and spread is not None and first.ties(spread)
        for index, spread in enumerate(spreads)
    ]


DROP_STARTUP, DROP_RANGE, DROP_STEP, DROP_VS_FASTEST = 9, 8, 7, 6
"""How readily the columns that repeat or detail an answer go when the table does not fit: the
start-up and compile seconds, the range (the verdict says the winner's), what compiled the step
(a note says where lines differ), and "vs fastest" (the rates say it)."""
DROP_SMALLER_EFFICIENCY, DROP_EFFICIENCY, DROP_HELD_BACK = 5, 2, 1
"""The answers themselves go last: the smaller counts' efficiency, then (after the smaller counts'
figures, `CountFigure.drop_smaller`) the largest count's efficiency, and last what holds it back."""


def _columns(counts: list[int], word: str, ranking: Ranking) -> list[Column]:
    """The declared columns, left to right. Dropped first when space is short: those that repeat
    or detail an answer (`DROP_STARTUP`...), then the answers, the smaller counts' first; never the
    names, the largest count's ranked figure (and with `--epochs` its test metric) or the note
    numbers. What is dropped is said under the table (`hidden_columns`)."""
    columns = [Column("framework", "framework", False, 0), Column("strategy", "strategy", False, 0)]
    for count in counts:
        largest = count == counts[-1]
        for figure in ranking.figures:
            drop = figure.drop_largest if largest else figure.drop_smaller
            columns.append(Column(f"{count} {word}\n{figure.header}", f"{figure.cell}_{count}", True, drop))
            if largest and figure.key == ranking.ranked:
                columns.append(Column(f"{count} {word}\nrange", RANGE, True, DROP_RANGE))
        if count != counts[0]:
            drop = DROP_EFFICIENCY if largest else DROP_SMALLER_EFFICIENCY
            columns.append(Column(f"{count} {word}\neff.", f"efficiency_{count}", True, drop))
    columns += [
        Column("start-up\n+compile s", "setup", True, DROP_STARTUP, breaks_after="+"),
        Column("vs\nfastest", "vs_fastest", True, DROP_VS_FASTEST),
        Column("step", "step", False, DROP_STEP),
        Column("holds\nback", "bottleneck", False, DROP_HELD_BACK),
        Column("notes", "notes", False, 0, breaks_after=","),
    ]
    return columns


def _number(value: object, pattern: str) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else pattern.format(value)


def _cells(line: pd.Series, counts: list[int], ranking: Ranking, compiling_differs: bool) -> dict[str, str]:
    """A line's cells: the ranked figure of a count a run did not finish shows its status (`oom`),
    one that finished without it (a target not reached) `ranking.missing`; other figures a dash.
    A figure with an interval shows the digits it supports; the step column is filled only where
    the lines differ in compiling their step."""
    cells = {"framework": str(line["framework"]), "strategy": str(line["strategy"])}
    for count in counts:
        status = line[f"status_{count}dev"]
        for figure in ranking.figures:
            spread = line_spread(line, figure.key, count) if figure.spread else None
            value = figure.shown_value(line[f"{figure.key}_{count}dev"])
            text = figure.shown(spread).text() if spread else _number(value, figure.pattern)
            if figure.key == ranking.ranked:
                text = text or (status if status not in ("", "ok") else ranking.missing)
            cells[f"{figure.cell}_{count}"] = text or "-"
        if count != counts[0]:
            cells[f"efficiency_{count}"] = _number(line[f"scaling_efficiency_pct_{count}dev"], "{:.0f}%")
    spread = line_spread(line, ranking.ranked, counts[-1])
    cells[RANGE] = ranking.figures[0].shown(spread).range_text if spread else ""
    cells["vs_fastest"] = TIE if line["tie"] else _number(line["vs_fastest_ratio"], "{:.2f}x")
    cells["step"] = ("compiled" if line["step"] != EAGER else EAGER) if compiling_differs and line["step"] else ""
    held = line_held_back(line)
    cells["bottleneck"] = (
        f"{held.label} {held.fraction:.0%}" if held else ""
    )  # its note says what it means, and from what
    cells["setup"] = _setup_text(line)
    cells["notes"] = f"[{','.join(str(n) for n in line['notes'])}]" if line["notes"] else ""
    return cells


def _setup_text(line: pd.Series) -> str:
    """`2.1+14.3`: the seconds from launch to the first step and, where the step was compiled,
    compiling it, at the largest count ("" without a start-up figure)."""
    startup, compile_seconds = _number(line["startup_seconds"], "{:,.1f}"), line["compile_seconds"]
    return startup + _number(compile_seconds, "+{:,.1f}") if startup else ""


def shown_columns(summary: CompactSummary) -> list[Column]:
    """The columns with something to show (a droppable column empty on every line is left out)."""
    return [c for c in summary.columns if c.drop_order == 0 or any(summary.cells[c.key])]


def fitting_columns(summary: CompactSummary, width: int) -> list[Column]:
    """The columns that fit in `width` characters, each as wide as its widest cell: columns are dropped
    by their declared order (emptied ones first), never narrowed, so no number is ever split."""
    from rich.cells import cell_len

    def needed(column: Column) -> int:
        header = max(cell_len(part) for part in column.header.splitlines())
        return max([header, *(cell_len(v) for v in summary.cells[column.key])])

    kept = shown_columns(summary)
    for order in sorted({c.drop_order for c in kept if c.drop_order}, reverse=True):
        if sum(needed(c) + TABLE_PADDING for c in kept) + 1 <= width:
            break
        kept = [c for c in kept if c.drop_order != order]
    return kept


def hidden_columns(summary: CompactSummary, width: int) -> list[Column]:
    """The columns with something to show that do not fit in `width` (`fitting_columns`)."""
    kept = fitting_columns(summary, width)
    return [column for column in shown_columns(summary) if column not in kept]


def hidden_sentence(summary: CompactSummary, width: int) -> str:
    """What the table left out at `width` columns and how to see it ("" where nothing was)."""
    hidden = [" ".join(column.header.split()) for column in hidden_columns(summary, width)]
    if not hidden:
        return ""
    return f"hidden at {width} columns: {'; '.join(hidden)} (a wider terminal, COLUMNS=200 or --format md shows them)"


def rich_table(summary: CompactSummary, width: int) -> Table:
    """The summary as a rich table that fits `width`: every cell on one line, no number folded."""
    columns = fitting_columns(summary, width)
    table = Table()
    for column in columns:
        table.add_column(
            column.header,
            justify="right" if column.numeric else "left",
            no_wrap=True,
            overflow="crop" if column.numeric else "ellipsis",
        )
    for _, cells in summary.cells.iterrows():
        table.add_row(*(Text(cells[c.key]) for c in columns))
    return table


def say(console: Console, text: str) -> None:
    """A sentence as its reader takes it: in a terminal, word-wrapped at its width (a terminal
    left to wrap it breaks words in two); piped or logged, on one line however long, so that a
    search of the output (grep) finds it whole."""
    console.print(Text(text), soft_wrap=not console.is_terminal)


def print_compact(summary: CompactSummary, console: Console) -> None:
    """The title, the table, then its numbered notes, each on one line (`say`)."""
    if summary.title:
        say(console, summary.title)
    console.print(rich_table(summary, console.width))
    if hidden := hidden_sentence(summary, console.width):
        say(console, hidden)
    for mark, note in enumerate(summary.notes, start=1):
        say(console, f"[{mark}] {note}")
    if summary.mfu:
        say(console, summary.mfu)


def markdown(summary: CompactSummary) -> str:
    columns = shown_columns(summary)
    header = [c.header.replace("\n", " ") for c in columns]
    body = summary.cells[[c.key for c in columns]].set_axis(header, axis=1)
    text = body.to_markdown(index=False, colalign=["right" if c.numeric else "left" for c in columns])
    notes = "".join(f"\n{number}. {note}" for number, note in enumerate(summary.notes, start=1))
    mfu = f"\n\n{summary.mfu}" if summary.mfu else ""
    return (f"**{summary.title}**\n\n" if summary.title else "") + text + ("\n" + notes if notes else "") + mfu + "\n"


def csv_text(summary: CompactSummary) -> str:
    lines = summary.lines.assign(
        notes=[" ".join(f"[{n}]" for n in ns) for ns in summary.lines["notes"]],
        caveats=[json.dumps(caveats) if caveats else "" for caveats in summary.lines["caveats"]],
    )
    return lines.to_csv(index=False)


def json_text(summary: CompactSummary, frame: pd.DataFrame) -> str:
    """The answer a script reads (`answer`): the verdict, the winner, the lines and every run's figures."""
    return json.dumps(answer(summary, frame), indent=2) + "\n"


def print_summary(frame: pd.DataFrame, title: str, fmt: str = "table") -> None:
    """The compact summary of `frame` on stdout in `fmt` (one of FORMATS): `table` sized to the
    terminal (`table_console`) and ending on the report's verdict, the others as plain text a
    script reads."""
    summary = compact_summary(frame, title)
    writers: dict[str, Callable[[CompactSummary], str]] = {
        "md": markdown,
        "csv": csv_text,
        "json": lambda summary: json_text(summary, frame),
    }
    if fmt == "table":
        console = table_console()
        print_compact(summary, console)
        say(console, verdict(summary))
        if sentence := same_start_sentence(frame):
            say(console, sentence)
    else:
        sys.stdout.write(writers[fmt](summary))
        sys.stdout.flush()
