"""The documentation a user navigates: README.md stays short and links every page under docs/,
and every relative link in README.md, BENCHMARKS.md, the run log and docs/*.md reaches a file that
exists, and a heading there when it names one, so that moving a section never leaves a dead link.
BENCHMARKS.md stays a reference a reader can scan (its runs' diary lives in the log), and no page
says the same paragraph twice."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from mgbench.runner.launchers import RUN_ENTRY

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
README_MAX_LINES = 150
BENCHMARKS = ROOT / "BENCHMARKS.md"
BENCHMARKS_MAX_LINES = 400
RUN_LOG = ROOT / "benchmarks" / "RUNS.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [README, BENCHMARKS, RUN_LOG, *DOCS]

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)
HEADING = re.compile(r"^#{1,6} +(.+?) *$", re.MULTILINE)


def links(page: Path) -> list[str]:
    """Targets of the page's markdown links and images, outside fenced code."""
    return LINK.findall(FENCE.sub("", page.read_text()))


def relative_links(page: Path) -> list[str]:
    return [target for target in links(page) if not re.match(r"^[a-z][a-z0-9+.-]*:", target)]


def anchor(heading: str) -> str:
    """The fragment a heading gets on GitHub: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    return {anchor(heading) for heading in HEADING.findall(FENCE.sub("", page.read_text()))}


def test_readme_stays_under_its_line_limit():
    lines = len(README.read_text().splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move detail into docs/"


def test_readme_links_every_docs_page():
    linked = {(README.parent / target.split("#")[0]).resolve() for target in relative_links(README)}
    assert DOCS, "docs/ holds no page"
    assert [page.name for page in DOCS if page.resolve() not in linked] == []


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_reaches_an_existing_file_and_heading(page):
    broken = []
    for target in relative_links(page):
        path, _, fragment = target.partition("#")
        destination = (page.parent / path).resolve() if path else page
        if not destination.exists():
            broken.append(f"{target}: no such file")
        elif fragment and destination.suffix == ".md" and fragment not in anchors(destination):
            broken.append(f"{target}: no such heading")
    assert broken == []


def test_benchmarks_stays_under_its_line_limit():
    lines = len(BENCHMARKS.read_text().splitlines())
    assert lines <= BENCHMARKS_MAX_LINES, f"BENCHMARKS.md has {lines} lines; move runs' detail to {RUN_LOG.name}"


@pytest.mark.parametrize("page", [BENCHMARKS, RUN_LOG], ids=lambda page: str(page.relative_to(ROOT)))
def test_figures_are_cited_by_run_not_by_the_work_that_asked_for_them(page):
    """A figure is cited by its date, machine and command; who asked for it is no part of it."""
    words = re.compile(r"\bissue \d+|\bbriefs?\b|\bmissions?\b|\bsessions?\b", re.IGNORECASE)
    assert words.findall(page.read_text()) == []


def prose_windows(page: Path, size: int = 3) -> list[tuple[str, ...]]:
    """Every run of `size` consecutive prose lines (outside fences and tables), stripped."""
    lines = [line.strip() for line in FENCE.sub("", page.read_text()).splitlines()]
    prose = [line for line in lines if line and not line.startswith("|")]
    return [tuple(prose[i : i + size]) for i in range(len(prose) - size + 1)]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_no_page_repeats_a_paragraph(page):
    repeated = [window[0] for window, count in Counter(prose_windows(page)).items() if count > 1]
    assert repeated == []


def test_multi_node_page_shows_the_entry_point_the_launchers_start():
    """The launcher commands docs/multi-node.md shows start the module launchers.py puts under them."""
    built = (ROOT / "docs" / "multi-node.md").read_text().split("## Launchers started by hand")[0]
    assert set(re.findall(r"-m (mgbench\S*)", built)) == {RUN_ENTRY[1]}
