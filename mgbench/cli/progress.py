"""One progress bar, and one way to stop on Ctrl-C, for the verbs that work through many files
(prepare, make-sample-chestxray)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console
from rich.progress import Progress

from mgbench.cli.interrupts import stopped
from mgbench.datasets.chestxray import LABEL_FILE


@contextmanager
def progress_bar(console: Console, description: str) -> Iterator[Callable[[int, int], None]]:
    """A rich bar on `console`; yields the `on_progress(done, total)` callback that moves it.

    The bar appears at the first call, when the work starts: an error found before that (a bad
    label file, a refused destination) stays the one line the command line promises.
    """
    progress = Progress(console=console)
    task = progress.add_task(description, total=None)

    def show(done: int, total: int) -> None:
        progress.start()
        progress.update(task, completed=done, total=total)

    try:
        yield show
    finally:
        if progress.live.is_started:
            progress.stop()


def interrupted(dst: Path, last_file: str = LABEL_FILE) -> int:
    """Say in one line what Ctrl-C or SIGTERM left (not the file written last, without which the
    loaders refuse the folder); the exit code of `interrupts.stopped`."""
    return stopped(f"interrupted; no {last_file} was written to {dst}")
