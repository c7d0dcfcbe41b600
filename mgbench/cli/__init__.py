"""The `mgbench` command line: one module per verb, each with `register(subparsers)`.

Every bad-input path ends the same way: one line `mgbench: error: ...` on stderr, exit code 2,
whether argparse or a later check found it. Every Ctrl-C or SIGTERM ends the same way too: one
line and exit code 130 (`interrupts`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from mgbench import __version__
from mgbench.cli.interrupts import sigterm_interrupts, stopped
from mgbench.cli.output import OutputError, drop_stdout, guarded_stdout
from mgbench.core.errors import UsageError, did_you_mean, say_error

EXAMPLES = """examples:
  mgbench compare --frameworks keras,pytorch --gpus 2        every Keras backend and PyTorch on 1 and 2 GPUs
  mgbench compare --frameworks pytorch --strategies all --gpus 1,2,4 --format md
  mgbench compare --resume runs/NAME                         rerun what an interrupted compare left
  mgbench report runs/NAME --format csv                      rebuild report.html, print the table as CSV
  mgbench diff runs/BEFORE runs/AFTER                        exit 1 where a run of AFTER is slower
  mgbench list                                               frameworks, strategies, models, what is installed
"""


class OneLineParser(argparse.ArgumentParser):
    """argparse prints a usage block on error; users asked for one clear line."""

    def error(self, message: str) -> NoReturn:
        say_error(message)
        raise SystemExit(2)

    def _check_value(self, action: argparse.Action, value: object) -> None:
        """argparse's check that a value is one of an option's choices (a verb, `--precision`),
        offering the closest choice in its one line: `mgbench compar` is `invalid choice:
        'compar' (did you mean 'compare'?)`. (argparse offers one from Python 3.14 only.)"""
        if action.choices is None or value in action.choices:
            return
        choices = [str(choice) for choice in action.choices]
        guess = did_you_mean(str(value), choices)
        raise argparse.ArgumentError(action, f"invalid choice: '{value}'{guess}; choose from {', '.join(choices)}")


def build_parser() -> argparse.ArgumentParser:
    from mgbench.cli import (
        bandwidth,
        catalog,
        compare,
        convert_weights,
        diff,
        envreport,
        make_sample,
        prepare,
        project,
        report,
        run,
        setup_env,
    )

    parser = OneLineParser(
        prog="mgbench",
        description="Which framework and data-parallel strategy trains fastest on your GPUs, and why.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"mgbench {__version__}")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=OneLineParser)
    for module in (
        compare,
        run,
        report,
        diff,
        project,
        catalog,
        envreport,
        bandwidth,
        setup_env,
        prepare,
        make_sample,
        convert_weights,
    ):
        module.register(verbs)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """`mgbench ARGV` (`sys.argv`'s when None); the exit code. The verb's handler finds the
    arguments in `args.argv`, not in `sys.argv`, which a caller in the same process did not set:
    compare records them as its command and checks what `--resume` is given against them.
    Output that cannot be written (stdout on a full disk, a closed pipe) is one line on stderr and
    exit code 2 too (`output.guarded_stdout`)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        with sigterm_interrupts(), guarded_stdout():
            parser = build_parser()
            args = parser.parse_args(argv)
            args.argv = argv
            if args.verb is None:
                # A bare `mgbench`: the usage and the verbs, not one line naming a missing argument.
                parser.print_help(sys.stderr)
                return 2
            return int(args.handler(args) or 0)
    except UsageError as error:
        say_error(str(error))
        return 2
    except KeyboardInterrupt:
        return stopped()
    except OutputError as error:
        say_error(f"cannot write the output: {error}")
        drop_stdout()
        return 2
