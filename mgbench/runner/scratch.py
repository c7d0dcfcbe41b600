"""A run's temporary folder (its TMPDIR): its own, in the system's temporary folder, gone after it.

Launchers and libraries leave files in TMPDIR (torchrun's `torchelastic_*`, the sockets of
multiprocessing's managers and of data-loader workers), so each run gets an empty folder of its
own and mgbench removes it when the run ends. It is not inside the run folder: a Unix socket's
path is limited to 107 bytes, which a run folder's path passes easily, and a run whose loader
cannot make its socket fails. When mgbench itself is killed (SIGKILL), the run's watchdog
(`mgbench.runner.watchdog`) removes the folder after it has killed the run's processes: the
run's environment names it (`SCRATCH_ENV`), so nothing of the run outlives it there either.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

SCRATCH_ENV = "MGBENCH_SCRATCH"
PREFIX = "mgbench-run-"


@contextmanager
def run_scratch() -> Iterator[dict[str, str]]:
    """For the block, the variables that give a run its own empty temporary folder (`TMPDIR`, and
    `SCRATCH_ENV` for its watchdog); the folder is removed after the block."""
    path = tempfile.mkdtemp(prefix=PREFIX)
    try:
        yield {"TMPDIR": path, SCRATCH_ENV: path}
    finally:
        shutil.rmtree(path, ignore_errors=True)


def remove_scratch(env: Mapping[str, str]) -> None:
    """Remove the temporary folder `env` names (`run_scratch`'s): only one of mgbench's own, by its
    name's prefix, so a variable set by hand cannot turn this into removing something else."""
    path = env.get(SCRATCH_ENV)
    if path and Path(path).name.startswith(PREFIX):
        shutil.rmtree(path, ignore_errors=True)
