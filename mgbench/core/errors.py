"""Errors the command line turns into one clear line on stderr and exit code 2."""

from __future__ import annotations

import difflib
import sys
from collections.abc import Iterable

from mgbench.core.wording import shown


class UsageError(Exception):
    """Bad input from the user (unknown name, impossible device count, missing path...).

    Raised anywhere; `mgbench.cli.main` prints `mgbench: error: <message>` and exits 2,
    so every bad-input path behaves the same whatever module found it.
    """


class UnsafeNameError(UsageError):
    """A name bound for a file name (a config's framework, strategy or device kind, a row's
    run id) that mgbench would never have written.

    Readers that skip a damaged line (a torn row of `results.jsonl`) let this one through: a
    run folder from elsewhere holding such a name is refused as a whole, never read in part.
    """


def say_error(message: str) -> None:
    """The one line every refusal ends on, `mgbench: error: ...`, on stderr, the command line's and
    a worker's alike: a name in it whose bytes are not UTF-8 shows them as the OS does (`shown`:
    `\\xff`), whichever check raised it."""
    print(f"mgbench: error: {shown(message)}", file=sys.stderr)


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """` (did you mean 'pytorch'?)` after an unknown `name`, offering the one or two of `known`
    close enough to be what was meant (difflib's ratio of 0.6 or more: a letter swapped, dropped
    or doubled; `dpp` is as near `dp` as `ddp`), else nothing: it goes into the one line that
    refuses the name."""
    close = difflib.get_close_matches(name, list(dict.fromkeys(known)), n=2)
    return f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
