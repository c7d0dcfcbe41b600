"""`mgbench list`: frameworks, strategies, models, and whether each framework is installed.

Within 100 columns (`LIST_WIDTH`), in a terminal or piped: each framework is a few lines of its
own, its strategies in a borderless grid whose last column wraps on words."""

from __future__ import annotations

import argparse
import sys

from rich import box
from rich.console import Console, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from mgbench.core.models import MODELS, catalogue
from mgbench.frameworks.registry import families, registered
from mgbench.frameworks.specs import Compiler, FrameworkSpec, StrategySpec
from mgbench.reports.summary import table_console
from mgbench.runner.venvs import inspect_installation


def register(verbs: argparse._SubParsersAction) -> None:
    parser = verbs.add_parser("list", help="frameworks, strategies and models, and what is installed")
    parser.set_defaults(handler=handle)


def capability_text(spec: FrameworkSpec) -> str:
    """The registry's capabilities in a few words: precisions, formats (default first), data, profiler,
    compiler, fused optimizer steps, GPUs."""
    can = spec.capabilities
    parts = [", ".join(can.precisions), " or ".join(can.data_formats)]
    parts += [f"{model}: {' or '.join(formats)}" for model, formats in can.model_data_formats.items()]
    if tuple(can.models) != tuple(MODELS):
        parts.append("models " + ", ".join(can.models))
    parts.append(f"real data through {can.loader}" if can.loader else "synthetic data only")
    parts.append(f"profiler {can.profiler}" if can.profiler else "no profiler")
    parts.append(compiler_text(can.compiler))
    if can.fused_optimizers:
        parts.append(f"--fused-optimizer: {' or '.join(can.fused_optimizers.values())}")
    if spec.gpu_note:
        parts.append(spec.gpu_note)
    return "; ".join(parts)


def compiler_text(compiler: Compiler | None) -> str:
    """What `--compile` does for a framework, in a few words."""
    if compiler is None:
        return "no compiler"
    if compiler.always:
        return f"always compiled ({compiler.name})"
    return f"--compile: {compiler.name}" + (" on 1 device" if compiler.one_device_note else "")


LIST_WIDTH = 100
"""The most columns `mgbench list` takes, in a wider terminal and piped alike."""
INDENT = (0, 0, 0, 2)


def installed_text(spec: FrameworkSpec) -> str:
    """`installed (interpreter; versions)`, or what is missing and how to install it."""
    found = inspect_installation(spec)
    if found.installed:
        versions = ", ".join(f"{k} {v}" for k, v in found.versions.items())
        return f"installed ({found.interpreter}; {versions})"
    return f"not installed: missing {', '.join(found.missing)}; install: {spec.install_hint}"


def strategy_text(strategy: StrategySpec) -> str:
    """What a strategy does, with where it cannot run and what it shards and communicates."""
    text = strategy.description
    if strategy.cpu_multi_device_note:
        text += f" [GPU only for N>1: {strategy.cpu_multi_device_note}]"
    if strategy.no_compile_note:
        text += f" [no --compile: {strategy.no_compile_note}]"
    return f"{text} [{communication_text(strategy)}]"


def communication_text(strategy: StrategySpec) -> str:
    """What a strategy shards and the collectives it runs each step, as it declares them."""
    if strategy.communication is None:
        return "sharding and collectives not declared: no expected communication time, not projected"
    return strategy.communication.describe()


def framework_block(spec: FrameworkSpec) -> list[RenderableType]:
    """A framework's name and installation, what it can train, then one line per strategy
    (launcher, what it does: wrapped in its own column, words never split)."""
    strategies = Table.grid(padding=(0, 2))
    strategies.add_column(no_wrap=True)
    strategies.add_column(no_wrap=True)
    strategies.add_column()
    for strategy in spec.strategies:
        default = "*" if strategy.name in spec.defaults else ""
        strategies.add_row(strategy.name + default, strategy.launcher, Text(strategy_text(strategy)))
    return [
        Text(f"{spec.name}: {installed_text(spec)}", style="bold"),
        Padding(Text(f"can train: {capability_text(spec)}"), INDENT, expand=False),
        Padding(strategies, INDENT, expand=False),
    ]


def handle(args: argparse.Namespace) -> int:
    shown = table_console()
    console = Console(width=min(shown.width, LIST_WIDTH), force_terminal=shown.is_terminal)
    with console.capture() as listing:
        print_listing(console)
    sys.stdout.write("".join(line.rstrip() + "\n" for line in listing.get().splitlines()))
    return 0


def print_listing(console: Console) -> None:
    """Every framework (`framework_block`), the families `--frameworks` takes, the models; lines
    are padded to the width, which `handle` trims."""
    console.print(Text("Frameworks and their strategies (* the default, which compare runs without --strategies)"))
    for spec in registered().values():
        console.print()
        for part in framework_block(spec):
            console.print(part)
    console.print()
    for family, members in families(registered()).items():
        console.print(
            f"--frameworks {family} runs {', '.join(members)} (those installed); --strategies all runs every strategy"
        )
    # Without borders, as the strategies' grid: the columns beside the description are as wide as
    # their longest entry (a language model's "1024 tokens", "next_token"), and the description wraps
    # in what the 100 columns leave it.
    models = Table(
        title="models", title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0)
    )
    for column in ("model", "input", "outputs", "loss", "optimizer"):
        models.add_column(column, no_wrap=True)
    models.add_column("description")
    for model in catalogue().values():
        note = f" ({model.layout_note})" if model.layout_note else ""
        models.add_row(
            model.name,
            model.input.describe(),
            str(model.num_classes),
            model.objective.loss,
            model.optimization.optimizer.kind,
            Text(model.description + note),
        )
    console.print(models)
