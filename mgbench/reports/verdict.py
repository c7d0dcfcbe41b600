"""The report's verdict: which line is fastest (or which tie), by how much, how it scales, what holds
it back, and what makes the answer mean little.

Fastest is by the compare's ranking (`ranking`): the rate for `--steps`, time to train (or
to the target) for `--epochs`, with the test metric beside it. Lines whose intervals overlap the
fastest line's at the largest device count tie within noise (`spread`): the verdict names them
together and ranks none of them.

It is read off the compact summary (`mgbench.reports.compact`), so the verdict and the table
under it can never disagree: the fastest line is the table's first, those it ties with are marked
`tie` there, its lead is over the first line it does not tie with, and what holds it back is the
bottleneck label of its row at the largest device count (from its host timing, and said so, where
the row was not profiled).

`Verdict` keeps every part apart (winner, ties, lead, scaling, hints, caveats) so a report can
serialise it (`to_dict`); `Verdict.text` is the sentence the terminal and the page print.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

from mgbench.reports.ranking import Ranking, line_name, line_spread
from mgbench.reports.readings import HOST_TIMING, line_held_back
from mgbench.reports.spread import Spread
from mgbench.reports.summary import superlinear

MEANS_LITTLE = {"timing": "Its timing means little", "metric": "Its test metric means little"}
"""How the verdict opens each caveat's sentence, by what it concerns (`caveats.Concern`)."""
LISTED = 3
"""Rows a caveat's sentence names before it says how many more."""


class CompactSummary(Protocol):
    """What the verdict reads of a `compact.CompactSummary`, named by its shape: compact prints
    the verdict under its table, so importing it here would be a cycle."""

    on_gpus: bool
    ranking: Ranking
    counts: list[int]
    compiling: str | None

    def to_records(self) -> list[dict[str, Any]]: ...


@dataclass(frozen=True)
class LineFigure:
    """A line's ranked figure at the largest device count (`devices`), with its interval and what
    the verdict says beside it (`test AUC 0.601`)."""

    framework: str
    strategy: str
    devices: int
    figure: Spread
    unit: str
    detail: str = ""

    @property
    def name(self) -> str:
        """`pytorch ddp`: the line as the verdict names it."""
        return line_name({"framework": self.framework, "strategy": self.strategy})

    @property
    def text(self) -> str:
        """`2,302 img/s [2,279-2,325]`, or `19.40 s [19.21-19.59] (test AUC 0.601)`."""
        return f"{self.figure.text()} {self.unit} [{self.figure.range_text}]" + (
            f" ({self.detail})" if self.detail else ""
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "framework": self.framework,
            "strategy": self.strategy,
            "devices": self.devices,
            **self.figure.to_dict(),
            "unit": self.unit,
            "detail": self.detail,
        }


@dataclass(frozen=True)
class Verdict:
    """The verdict's parts (see the module doc); `winner` None where no line has the figure."""

    devices: int
    unit: str
    """`GPU`, `GPUs`, `CPU device`, `CPU devices`."""
    achievement: str
    winner: LineFigure | None
    ties: tuple[LineFigure, ...] = ()
    """The lines that tie with the winner within noise (their intervals overlap)."""
    runner_up: LineFigure | None = None
    """The first line that does not tie with the winner."""
    lead: float | None = None
    """How many times as fast the winner is as the runner-up."""
    scaling: str | None = None
    held_back: str = ""
    compiling: str | None = None
    """Where lines differ in compiling their step (`hints.differ_in_compiling`)."""
    hints: tuple[str, ...] = ()
    caveats: tuple[dict[str, str], ...] = ()
    """Each row's caveat (`caveats.Caveat.to_dict`) with `where` it is (`pytorch ddp x4`)."""
    unmeasured: tuple[str, ...] = ()
    """Each line with no figure at any device count, with how its runs ended (`keras-tf mirrored
    (not-installed)`), so that a winner is never named without them."""
    lines: int = 0
    """How many lines the compare has, those without a figure included."""
    nothing: str = ""

    def _lead(self) -> str:
        assert self.winner is not None
        where = f"on {self.devices} {self.unit}"
        if self.ties:
            names = [self.winner.name, *(line.name for line in self.ties)]
            figures = [self.winner.text, *(line.text for line in self.ties)]
            text = f"{_joined(names)} tie within noise for fastest {where}: {_joined(figures)}"
            next_line = self._lead_over(f"the next, {self.runner_up.name}") if self.runner_up and self.lead else ""
            return text + (f"; {next_line}" if next_line else "")
        text = f"{self.winner.name} {self.achievement} {where}: {self.winner.text}"
        if self.runner_up is None or self.lead is None:
            return text + ", the only line with a figure there"
        return text + f", {self._lead_over(self.runner_up.name)}"

    def _lead_over(self, other: str) -> str:
        """`1.11x keras-jax jax-shard-map`: the lead over `other` as a ratio, where it has a finite
        value; one past a float's range (a runner-up at 1e-310 img/s) is no ratio to state."""
        assert self.lead is not None
        if math.isfinite(self.lead):
            return f"{self.lead:.2f}x {other}"
        return f"far ahead of {other} (a lead past a float's range)"

    def _caveat_sentences(self) -> list[str]:
        sentences = []
        for concern, opening in MEANS_LITTLE.items():
            found = [caveat for caveat in self.caveats if caveat["concern"] == concern]
            if not found:
                continue
            listed = "; ".join(f"{caveat['where']}: {caveat['text']}" for caveat in found[:LISTED])
            more = f"; and {len(found) - LISTED} more" if len(found) > LISTED else ""
            remedies = "; ".join(dict.fromkeys(caveat["remedy"] for caveat in found))
            sentences.append(f"{opening} ({listed}{more}): {remedies}.")
        return sentences

    def _unmeasured_sentence(self) -> str:
        """`2 of the 4 lines have no figure: keras-tf mirrored (not-installed), ...` ("" where all have one)."""
        if not self.unmeasured:
            return ""
        have = "has" if len(self.unmeasured) == 1 else "have"
        return f"{len(self.unmeasured)} of the {self.lines} lines {have} no figure: {', '.join(self.unmeasured)}."

    @property
    def text(self) -> str:
        """The verdict as the terminal and the page print it."""
        if self.winner is None:
            return self.nothing
        first = "; ".join(part for part in (self._lead(), self.scaling, self.held_back) if part) + "."
        extra = [*(f"{sentence}." for sentence in filter(None, [self.compiling, *self.hints]))]
        return " ".join(filter(None, [first, self._unmeasured_sentence(), *extra, *self._caveat_sentences()]))

    def to_dict(self) -> dict[str, Any]:
        """Every part, for a report that serialises the verdict."""
        return {
            "text": self.text,
            "devices": self.devices,
            "unit": self.unit,
            "achievement": self.achievement,
            "winner": None if self.winner is None else self.winner.to_dict(),
            "ties": [figure.to_dict() for figure in self.ties],
            "runner_up": None if self.runner_up is None else self.runner_up.to_dict(),
            "lead": self.lead,
            "scaling": self.scaling,
            "held_back": self.held_back,
            "compiling": self.compiling,
            "hints": list(self.hints),
            "caveats": list(self.caveats),
            "unmeasured": list(self.unmeasured),
        }


def _joined(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + f" and {items[-1]}"


def judge(summary: CompactSummary) -> Verdict:
    """The verdict of a compact summary: its first line, those that tie with it, its lead over the
    next, its scaling, what holds it back, and every line's hints and caveats."""
    lines, ranking, counts = summary.to_records(), summary.ranking, summary.counts
    top, word = counts[-1], "GPU" if summary.on_gpus else "CPU device"
    unit = word if top == 1 else f"{word}s"
    figures = [(line, line_spread(line, ranking.ranked, top)) for line in lines]
    shared = {
        "devices": top,
        "unit": unit,
        "achievement": ranking.achievement(),
        "hints": tuple(str(line["compile_hint"]) for line in lines if line.get("compile_hint")),
        "caveats": tuple(caveat for line in lines for caveat in line.get("caveats") or []),
        "compiling": summary.compiling,
        "unmeasured": tuple(f"{line_name(line)} ({line['unmeasured']})" for line in lines if line.get("unmeasured")),
        "lines": len(lines),
    }
    first, winner = figures[0]
    if winner is None:
        return Verdict(winner=None, nothing=ranking.nothing, **shared)  # type: ignore[arg-type]

    def figure(line: dict[str, Any], spread: Spread) -> LineFigure:
        framework, strategy = str(line["framework"]), str(line["strategy"])
        shown = ranking.figures[0].shown(spread)  # the ranked figure, in the unit it is shown in
        return LineFigure(framework, strategy, top, shown, ranking.unit, ranking.detail(line, top))

    others = [(line, spread) for line, spread in figures[1:] if spread is not None]
    ties = tuple(figure(line, spread) for line, spread in others if line.get("tie"))
    runner_up = next(((line, spread) for line, spread in others if not line.get("tie")), None)
    held = line_held_back(first)
    if held is not None:  # what it means is the table's note, said once
        source = f", {HOST_TIMING}" if held.source == HOST_TIMING else ""
        held_back = f"held back by {held.label} ({held.fraction:.0%} of the step{source})"
    else:
        held_back = "no breakdown says what holds it back (not profiled)"
    return Verdict(
        winner=figure(first, winner),
        ties=ties,
        runner_up=None if runner_up is None else figure(*runner_up),
        lead=None if runner_up is None else ranking.lead(winner, runner_up[1]),
        scaling=_scaling(first, counts, word, ranking),
        held_back=held_back,
        **shared,  # type: ignore[arg-type]
    )


def _scaling(first: dict[str, Any], counts: list[int], word: str, ranking: Ranking) -> str | None:
    """How the first line scales (`ranking.scaling`), unless its speed-up exceeds the device
    ratio: its runs were then not measured alike (its note says so), and no figure of them is stated."""
    efficiency = first.get(f"scaling_efficiency_pct_{counts[-1]}dev")
    if len(counts) > 1 and isinstance(efficiency, float) and superlinear(efficiency / 100):
        return f"its scaling is not stated: its {counts[0]}- and {counts[-1]}-{word} runs were not measured alike"
    return ranking.scaling(first, counts, word)


def verdict(summary: CompactSummary) -> str:
    """The verdict's sentence (`judge(summary).text`), e.g. `pytorch ddp is fastest on 2 GPUs:
    2,302 img/s [2,279-2,325], 1.11x keras-jax jax-shard-map; 1.86x its 1-GPU throughput (93%
    scaling efficiency); held back by idle (50% of the step)`. Says so when no run finished."""
    return judge(summary).text
