"""Ctrl-C and SIGTERM end every verb the same way: one line on stderr and exit code 130.

SIGTERM (a scheduler ending a job, `kill`) is raised as KeyboardInterrupt, as Ctrl-C is, so both
take the one way out that cleans up: a compare's run stops its process groups and leaves an
`interrupted` row, the dataset workers are terminated (`datasets.parallel`), a folder's lock is
released. Whatever a verb does not say itself (`progress.interrupted` names the folder prepare
left incomplete) `mgbench.cli.main` says with `stopped`, from the planning and the image check to
the installation probes.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager

INTERRUPTED_EXIT_CODE = 128 + signal.SIGINT
"""What shells give a command Ctrl-C ended; SIGTERM ends mgbench with it too."""


@contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """SIGTERM raised as KeyboardInterrupt in the block, the handler before restored after it
    (`main` also runs inside the tests' own process). Not in a rank under a launcher (`mgbench
    run` started by torchrun or horovodrun): the launcher ends its ranks with SIGTERM, and a
    Python handler would wait for a rank stuck in a collective to come back to Python."""
    # Imported here, inside main's handling, not before it: the runner's import takes a while.
    from mgbench.runner.launch import launched_by_launcher

    if launched_by_launcher():
        yield
        return
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def stopped(message: str = "interrupted") -> int:
    """Print `mgbench: <message>` and return INTERRUPTED_EXIT_CODE; a further Ctrl-C is ignored
    and a further SIGTERM ends the process at once while it winds down, so neither can turn the
    one line into a traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    print(f"mgbench: {message}", file=sys.stderr)
    return INTERRUPTED_EXIT_CODE
