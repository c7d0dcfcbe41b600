"""How every layer's lines word what they say: a count with its noun (`counted`), and a name as
the OS shows it (`shown`).

On the ground floor because the runner's progress, a worker's refusal and the reports say them
alike."""

from __future__ import annotations

import os
from pathlib import Path


def counted(count: int, noun: str) -> str:
    """`1 run`, `2 runs`: a count and its noun, plural but for one."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def shown(text: Path | str) -> str:
    """`text` (a path, or a line naming one) as the OS shows a name: its UTF-8 as it is, any other
    byte (held by Python as a surrogate, which no UTF-8 output takes) as a backslash escape,
    `\\xff`. A surrogate no name of the OS holds (`\\ud800`, read from a JSON file) is escaped as
    it is."""
    name = os.fspath(text)
    try:
        return os.fsencode(name).decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return name.encode("utf-8", "backslashreplace").decode("utf-8")
