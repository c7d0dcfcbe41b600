"""`mgbench list`: frameworks, strategies, models, and whether each framework is installed."""

from __future__ import annotations

import argparse

from rich.table import Table

from mgbench.runner.venvs import inspect_installation
from mgbench.common.models import MODELS
from mgbench.frameworks.registry import registered
from mgbench.reports.summary import table_console


def register(verbs: argparse._SubParsersAction) -> None:
    parser = verbs.add_parser("list", help="frameworks, strategies and models, and what is installed")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    console = table_console()
    frameworks = Table(title="frameworks and strategies")
    for column in ("framework", "strategy", "launcher", "what it does", "installed"):
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
            frameworks.add_row(spec.name if i == 0 else "", strategy.name, strategy.launcher, notes, state if i == 0 else "")
    console.print(frameworks)
    models = Table(title="models")
    for column in ("model", "input", "outputs", "loss", "description"):
        models.add_column(column)
    for model in MODELS.values():
        models.add_row(model.name, f"{model.image_size} px", str(model.num_classes), model.loss, model.description)
    console.print(models)
    return 0
