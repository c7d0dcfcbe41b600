"""`mgbench list`: frameworks, strategies, models, and whether each framework is installed."""

from __future__ import annotations

import argparse

from rich.table import Table

from mgbench.common.models import MODELS, catalogue
from mgbench.frameworks.registry import families, registered
from mgbench.frameworks.specs import Compiler, FrameworkSpec
from mgbench.reports.summary import table_console
from mgbench.runner.venvs import inspect_installation


def register(verbs: argparse._SubParsersAction) -> None:
    parser = verbs.add_parser("list", help="frameworks, strategies and models, and what is installed")
    parser.set_defaults(handler=handle)


def capability_text(spec: FrameworkSpec) -> str:
    """The registry's capabilities in a few words: precisions, formats (default first), data, profiler, GPUs."""
    can = spec.capabilities
    parts = [", ".join(can.precisions), " or ".join(can.data_formats)]
    parts += [f"{model}: {' or '.join(formats)}" for model, formats in can.model_data_formats.items()]
    if tuple(can.models) != tuple(MODELS):
        parts.append("models " + ", ".join(can.models))
    parts.append(f"real data through {can.loader}" if can.loader else "synthetic data only")
    parts.append(f"profiler {can.profiler}" if can.profiler else "no profiler")
    parts.append(compiler_text(can.compiler))
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


def handle(args: argparse.Namespace) -> int:
    console = table_console()
    frameworks = Table(title="frameworks and strategies")
    for column in ("framework", "strategy", "default", "launcher", "what it does", "can train", "installed"):
        frameworks.add_column(column, overflow="fold")
    for spec in registered().values():
        found = inspect_installation(spec)
        if found.installed:
            state = f"yes ({found.interpreter}; " + ", ".join(f"{k} {v}" for k, v in found.versions.items()) + ")"
        else:
            state = f"no: missing {', '.join(found.missing)}; install: {spec.install_hint}"
        for i, strategy in enumerate(spec.strategies):
            notes = strategy.description
            if strategy.cpu_multi_device_note:
                notes += f" [GPU only for N>1: {strategy.cpu_multi_device_note}]"
            if strategy.no_compile_note:
                notes += f" [no --compile: {strategy.no_compile_note}]"
            default = "yes" if strategy.name in spec.defaults else ""
            first = i == 0
            frameworks.add_row(
                spec.name if first else "",
                strategy.name,
                default,
                strategy.launcher,
                notes,
                capability_text(spec) if first else "",
                state if first else "",
            )
    console.print(frameworks)
    for family, members in families(registered()).items():
        console.print(
            f"--frameworks {family} runs {', '.join(members)} (those installed); --strategies all runs every strategy"
        )
    models = Table(title="models")
    for column in ("model", "input", "outputs", "loss", "description"):
        models.add_column(column)
    for model in catalogue().values():
        note = f" ({model.layout_note})" if model.layout_note else ""
        models.add_row(
            model.name, f"{model.image_size} px", str(model.num_classes), model.loss, model.description + note
        )
    console.print(models)
    return 0
