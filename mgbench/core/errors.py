"""Errors the command line turns into one clear line on stderr and exit code 2."""


class UsageError(Exception):
    """Bad input from the user (unknown name, impossible device count, missing path...).

    Raised anywhere; `mgbench.cli.main` prints `mgbench: error: <message>` and exits 2,
    so every bad-input path behaves the same whatever module found it.
    """


class UnsafeNameError(UsageError):
    """A name bound for a file name (a config's framework, strategy or device kind, a row's
    run id) that mgbench would never have written.

    Readers that skip a damaged line (a torn row of `results.jsonl`) let this one through: a
    run folder from elsewhere holding such a name is refused as a whole, never read in part.
    """
