"""The documentation a user navigates: README.md stays short and links every page under docs/,
and every relative link in README.md, BENCHMARKS.md and docs/*.md reaches a file that exists,
and a heading there when it names one, so that moving a section never leaves a dead link."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
README_MAX_LINES = 300
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [README, ROOT / "BENCHMARKS.md", *DOCS]

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
    assert lines < README_MAX_LINES, f"README.md has {lines} lines; move detail into docs/"


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
