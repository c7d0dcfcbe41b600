"""`mgbench setup FRAMEWORK`: build the framework's own virtual environment under `.venvs/`."""

from __future__ import annotations

import argparse

from mgbench.common.environments import create_environment
from mgbench.frameworks import framework_spec


def register(verbs: argparse._SubParsersAction) -> None:
    parser = verbs.add_parser("setup", help="create .venvs/FRAMEWORK from requirements/FRAMEWORK.txt")
    parser.add_argument("framework")
    parser.add_argument("--python", default=None, help="interpreter for the new environment (default: this one)")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    python = create_environment(framework_spec(args.framework), args.python)
    print(f"{args.framework}: ready, interpreter {python}")
    return 0
