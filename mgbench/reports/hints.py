"""Hints for the next step: lines that differ in whether their step was compiled, and lines a
compiler would help.

A compiled step (XLA, torch.compile) launches a few large kernels where an eager one launches
many small ones, so a compare of a compiled line against an eager one measures the compilers as
much as the frameworks: the table and the verdict say so wherever the lines differ in it. And a
line held back by launch overhead (its devices idle while the host launches kernels) whose
framework has a compiler it did not use is told to try `--compile`.
"""

from __future__ import annotations

import pandas as pd

from mgbench.core.errors import UsageError
from mgbench.frameworks.registry import framework_spec
from mgbench.frameworks.specs import Compiler
from mgbench.reports.columns import Col
from mgbench.reports.readings import HOST_TIMING, HeldBack

EAGER = "eager"
"""What a line whose step nothing compiled shows in the table's step column."""


def step_kind(row: pd.Series) -> str:
    """What compiled the row's step (`xla (always)`, `torch.compile (default)`), else `eager`."""
    compiler = row.get(Col.COMPILER)
    return compiler if isinstance(compiler, str) and compiler else EAGER


def differ_in_compiling(kinds: dict[str, str]) -> str | None:
    """The sentence saying lines differ in compiling their step (`kinds`: each line's name and
    `step_kind`), None where all are compiled or all eager."""
    compiled = {name: kind for name, kind in kinds.items() if kind != EAGER}
    eager = [name for name, kind in kinds.items() if kind == EAGER]
    if not compiled or not eager:
        return None
    named = ", ".join(f"{name} ({kind})" for name, kind in compiled.items())
    return (
        f"Compiled against eager: {named} compiled {'its' if len(compiled) == 1 else 'their'} step, "
        f"{', '.join(eager)} ran {'its' if len(eager) == 1 else 'theirs'} eagerly, so the compare measures "
        "the compilers as much as the frameworks (--compile compiles the step where the framework can)"
    )


def _compiler(framework: str) -> Compiler | None:
    """The framework's compiler (None: it has none, or the framework is not one this mgbench knows)."""
    try:
        return framework_spec(framework).capabilities.compiler
    except UsageError:
        return None


def compile_hint(name: str, row: pd.Series, held: HeldBack | None) -> str | None:
    """`--compile` for a line (`name`) whose row is held back by launch overhead (its devices or
    operators idle, from a profile), ran eagerly, and whose framework can compile; None otherwise."""
    if held is None or held.name != "idle" or held.source == HOST_TIMING or step_kind(row) != EAGER:
        return None
    compiler = _compiler(str(row[Col.FRAMEWORK]))
    if compiler is None or compiler.always:
        return None
    return (
        f"{name} is held back by launch overhead (idle {held.fraction:.0%} of the step) and ran eagerly: "
        f"try --compile ({compiler.name}), whose compiled step launches fewer, larger kernels"
    )
