"""What a file read back must hold before any code uses it: JSON within bounds, of declared types.

A run folder or a config may come from anywhere, and code that reads a field of it takes
it to be what mgbench wrote: `samples_per_sec` a number, `compile` a name. Rather than a second
description of each file kept beside the class that writes it, the class's own annotations are
the schema (`check_fields`), so a field added to `RunResult` or `RunConfig` is checked as soon as
it is declared. `parse_json` turns what is no JSON at all (cut short, not UTF-8, nested past
`MAX_DEPTH`) into the same one-line `UsageError`, so every reader refuses alike; `read_json_file`
does so for a file, which it reads only if it is a regular file (a FIFO would hold the read).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import reprlib
import sys
import types
import typing
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any

from mgbench.core.errors import UsageError
from mgbench.core.safe_files import read_regular

MAX_DEPTH = 32
"""Objects and lists nested deeper than this are refused. mgbench writes at most a few levels (a
row's profile summary); the bound keeps every later `json.dumps`, `repr` or pandas call on a
value far from Python's recursion limit, which a file nested a thousand levels deep would reach."""


def read_json_file(path: Path, what: str) -> Any:
    """The JSON value of the file `path` (`parse_json`); a file that cannot be read, or is no
    regular file (`safe_files.read_regular`), is one UsageError naming `what` and why."""
    try:
        data = read_regular(path)
    except OSError as error:
        raise UsageError(f"{what} cannot be read: {error.strerror or error}") from None
    return parse_json(data, what)


def parse_json(data: str | bytes, what: str) -> Any:
    """The JSON value in `data`; anything else is one UsageError naming `what` and why."""
    too_deep = UsageError(f"{what} cannot be read: it nests deeper than {MAX_DEPTH} levels")
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
    except UnicodeDecodeError as error:
        raise UsageError(f"{what} cannot be read: byte {error.start} is not UTF-8") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise UsageError(f"{what} cannot be read (cut short?): {error}") from None
    except RecursionError:
        raise too_deep from None
    except ValueError:  # an integer past Python's conversion limit (`sys.get_int_max_str_digits`)
        limit = sys.get_int_max_str_digits()
        raise UsageError(f"{what} cannot be read: it holds a number of more than {limit} digits") from None
    if _deeper_than(value, MAX_DEPTH):
        raise too_deep
    if digits := _int_beyond_float(value):
        raise UsageError(f"{what} cannot be read: it holds a number of {digits} digits, more than a float holds")
    return value


def _int_beyond_float(value: Any) -> int:
    """The digits of the first int in `value` (at any depth) too large for a float, 0 where none
    is: mgbench writes none, and every reader computes with a figure as a float, which `float()`
    of such an int cannot give."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict | list):
            stack.extend(item.values() if isinstance(item, dict) else item)
        elif isinstance(item, int) and abs(item) > sys.float_info.max:
            return len(str(abs(item)))
    return 0


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether `value` nests objects or lists more than `limit` deep (a walk without recursion)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth >= limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def check_fields(values: Mapping[str, Any], cls: type, what: str, *, null_numbers: bool = False) -> None:
    """Each of `values` that names a field of the dataclass `cls` holds its declared type; the
    first that does not is one UsageError naming `what`, the field, the value and the type.

    With `null_numbers`, a number inside a list or an object may be null: a result row writes a
    number that has no value (NaN, an infinite loss) as null, as NaN is not JSON (`metrics.defined`).
    """
    hints = field_types(cls)
    for name, value in values.items():
        if name in hints and not conforms(value, hints[name], null_numbers):
            raise UsageError(f"{what}: {name} is {reprlib.repr(value)}, not {describe(hints[name])}")


@functools.cache
def field_types(cls: type) -> dict[str, Any]:
    """The dataclass's fields and their annotations, evaluated (`from __future__ import annotations`
    leaves them as text)."""
    hints = typing.get_type_hints(cls)
    return {field.name: hints[field.name] for field in dataclasses.fields(cls)}


def conforms(value: Any, hint: Any, null_numbers: bool = False) -> bool:
    """Whether a value parsed from JSON is of type `hint` (`null_numbers`: see `check_fields`). A
    tuple is read as the list JSON gives; an int counts as a float (Python writes 2.0 as 2.0, other
    writers as 2), a bool as neither; a `StrEnum` is one of its values' strings."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)

    def item(value: Any, hint: Any) -> bool:
        return (null_numbers and value is None and hint is float) or conforms(value, hint, null_numbers)

    if hint is Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(conforms(value, arg, null_numbers) for arg in args)
    if origin is typing.Literal:
        return any(value == arg and type(value) is type(arg) for arg in args)
    if origin in (list, tuple):
        return isinstance(value, list | tuple) and all(item(entry, args[0]) for entry in value)
    if origin is dict:
        return isinstance(value, dict) and all(item(entry, args[1]) for entry in value.values())
    if isinstance(hint, type) and issubclass(hint, StrEnum):
        return isinstance(value, str) and value in {member.value for member in hint}
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint in (str, bool, type(None)):
        return isinstance(value, hint)
    raise TypeError(f"no check for {hint!r}")


def describe(hint: Any) -> str:
    """`float | None`, `list[float]`: the annotation as the source spells it."""
    return hint.__name__ if type(hint) is type else str(hint).replace("typing.", "").replace("NoneType", "None")
