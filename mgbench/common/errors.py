"""Errors the command line turns into one clear line on stderr and exit code 2."""


class UsageError(Exception):
    """Bad input from the user (unknown name, impossible device count, missing path...).

    Raised anywhere; `mgbench.cli.main` prints `mgbench: error: <message>` and exits 2,
    so every bad-input path behaves the same whatever module found it.
    """
