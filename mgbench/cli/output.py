"""mgbench's own output: stdout, as a stream whose failure is told apart from every other OSError,
and the lines a verb says on the console (stderr) on the way.

A verb's table or JSON may go to a file on a full disk (`mgbench list > /dev/full`) or a pipe
closed early: the write fails with an OSError like any file's. `guarded_stdout` makes stdout a
stream that raises `OutputError` instead, so that `mgbench.cli.main` says it in one line, while
an OSError of anything else keeps its own handling.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from rich.console import Console
from rich.markup import escape


class OutputError(Exception):
    """Writing stdout failed (a full disk, a closed pipe); the message says why."""


class GuardedOutput:
    """`stream` with its writes' and flushes' OSError raised as `OutputError`; all else is the stream's."""

    def __init__(self, stream: TextIO):
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as error:
            raise OutputError(error.strerror or str(error)) from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as error:
            raise OutputError(error.strerror or str(error)) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextmanager
def guarded_stdout() -> Iterator[None]:
    """The block with stdout a `GuardedOutput`, flushed at its end, so that a write stdout held
    fails inside the block rather than as the interpreter exits."""
    stream = sys.stdout
    sys.stdout = GuardedOutput(stream)
    try:
        yield
        sys.stdout.flush()
    finally:
        sys.stdout = stream


def drop_stdout() -> None:
    """Point stdout's descriptor at /dev/null once it has failed, so that the interpreter's own
    flush as it exits does not fail again with a traceback of its own."""
    try:
        fd = sys.stdout.fileno()
    except (OSError, ValueError):  # no descriptor of its own (a caller's capture)
        return
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, fd)
    os.close(null)


def note_to(console: Console) -> Callable[[str], None]:
    """How a verb says a line that stops nothing but should be read (what reading a dataset
    decided, a framework left out): in yellow, as it is, whatever brackets it holds."""
    return lambda line: console.print(f"[yellow]{escape(line)}[/]")
