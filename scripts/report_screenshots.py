"""Screenshots of a report as a phone and a laptop show it, with Debian's headless Chromium.

    python scripts/report_screenshots.py runs/NAME/report.html docs/example-report/cpu-compare

writes `cpu-compare-390.png` and `cpu-compare-1280.png`: the report's first screen in a window 390
CSS pixels wide (a phone) and 1280 wide (a laptop). Headless Chromium lays a page out no narrower
than 500 pixels, whatever its window, so the page is shown in a frame of the width asked for
(`framed`), the way tests/test_report_page.py measures it, and the screenshot cut to that width.
"""

from __future__ import annotations

import argparse
import html
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from PIL import Image

NARROWEST_WINDOW = 500
"""Headless Chromium's narrowest layout: a window asked to be narrower is this wide."""
WIDTHS = {390: 844, 1280: 900}
"""Width and height of each screen shot: an iPhone 12-15 and a laptop's browser window."""
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--hide-scrollbars",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def framed(page: str, width: int, height: int) -> str:
    """`page` shown in a frame `width` x `height` CSS pixels at the top left of a page of its own,
    which the frame's document (same origin: `srcdoc`) can reach as `parent`."""
    frame = html.escape(page, quote=True)
    style = f"border:0;display:block;width:{width}px;height:{height}px"
    return (
        f'<!DOCTYPE html><html><body style="margin:0"><iframe srcdoc="{frame}" style="{style}"></iframe></body></html>'
    )


def chromium(binary: str, *args: str) -> subprocess.CompletedProcess:
    """Headless Chromium with a profile of its own, removed after it."""
    profile = tempfile.mkdtemp(prefix="mgbench-chromium-")
    try:
        command = [binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=120)
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def screenshot(binary: str, report: Path, png: Path, width: int, height: int) -> Path:
    """The report's first `width` x `height` pixels as Chromium lays it out at that width."""
    with tempfile.TemporaryDirectory(prefix="mgbench-shot-") as scratch:
        page = Path(scratch, "framed.html")
        page.write_text(framed(report.read_text(), width, height))
        window = f"--window-size={max(width, NARROWEST_WINDOW)},{height}"
        done = chromium(binary, f"--screenshot={Path(scratch, 'shot.png')}", window, page.as_uri())
        if done.returncode != 0:
            raise SystemExit(f"chromium failed: {done.stderr[-500:]}")
        with Image.open(Path(scratch, "shot.png")) as shot:
            shot.crop((0, 0, width, height)).save(png)
    return png


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path, help="a report.html")
    parser.add_argument("prefix", type=Path, help="PREFIX-390.png and PREFIX-1280.png are written")
    args = parser.parse_args()
    binary = shutil.which("chromium")
    if binary is None:
        sys.exit("chromium is not installed (Debian: apt-get install chromium; make test installs it as root)")
    for width, height in WIDTHS.items():
        png = args.prefix.with_name(f"{args.prefix.name}-{width}.png")
        print(screenshot(binary, args.report, png, width, height))


if __name__ == "__main__":
    main()
