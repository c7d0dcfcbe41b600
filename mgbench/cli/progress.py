"""One progress bar for the verbs that work through many files (prepare, make-sample-chestxray)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator

from rich.console import Console
from rich.progress import Progress


@contextmanager
def progress_bar(console: Console, description: str) -> Iterator[Callable[[int, int], None]]:
    """A rich bar on `console`; yields the `on_progress(done, total)` callback that moves it."""
    with Progress(console=console) as progress:
        task = progress.add_task(description, total=None)

        def show(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        yield show
