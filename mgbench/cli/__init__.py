"""The `mgbench` command line: one module per verb, each with `register(subparsers)`.

Every bad-input path ends the same way: one line `mgbench: error: ...` on stderr, exit code 2,
whether argparse or a later check found it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from mgbench.common.errors import UsageError


class OneLineParser(argparse.ArgumentParser):
    """argparse prints a usage block on error; users asked for one clear line."""

    def error(self, message: str) -> NoReturn:
        print(f"mgbench: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    from mgbench.cli import (
        bandwidth,
        catalog,
        compare,
        envreport,
        make_sample,
        prepare,
        project,
        report,
        run,
        setup_env,
    )

    parser = OneLineParser(
        prog="mgbench", description="Which framework and data-parallel strategy trains fastest on your GPUs, and why."
    )
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB", parser_class=OneLineParser)
    for module in (compare, run, report, project, catalog, envreport, bandwidth, setup_env, prepare, make_sample):
        module.register(verbs)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except UsageError as error:
        print(f"mgbench: error: {error}", file=sys.stderr)
        return 2
