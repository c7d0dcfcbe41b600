"""`mgbench setup FRAMEWORK`: build the framework's own virtual environment under `.venvs/`, its
loaders decoding with pillow-simd where this machine can compile it (else Pillow, saying why)."""

from __future__ import annotations

import argparse

from mgbench.runner.pillow_simd import install_pillow_simd
from mgbench.runner.venvs import create_environment, spec_for_setup


def register(verbs: argparse._SubParsersAction) -> None:
    parser = verbs.add_parser(
        "setup", help="create .venvs/ENV from requirements/ENV.txt for a framework or environment"
    )
    parser.add_argument("framework", help="a framework (keras) or an environment name (keras-tf)")
    parser.add_argument("--python", default=None, help="interpreter for the new environment (default: this one)")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    python = create_environment(spec_for_setup(args.framework), args.python)
    install_pillow_simd(str(python), args.framework)
    print(f"{args.framework}: ready, interpreter {python}")
    return 0
