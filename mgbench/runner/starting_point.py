"""The starting point a compare's runs share (`--init`), kept in its folder and checked again on resume.

Every row records the digest of the weights it started from (`init_digest`). A compare that is
resumed must start the runs to come from the same weights as the rows done, or its rows would
compare frameworks from two starting points without a word: `--init FILE.npz` is read again
when the compare resumes, as the dataset is, and a file that holds other weights now is refused
in one line. With `--init same` the folder keeps the draw as `initial-weights.npz` (a later
compare's `--init` takes it): that file is checked to be the start the rows record, and written
when it is missing (a compare stopped before it was written).
"""

from __future__ import annotations

from mgbench.core.config import RunConfig
from mgbench.core.errors import UsageError
from mgbench.core.initial_weights import (
    INIT_FRAMEWORK,
    INIT_SAME,
    InitialWeights,
    initial_weights,
    read_weights_file,
    weights_file_bytes,
)
from mgbench.datasets.resolve import task_for
from mgbench.records.results import RunResult
from mgbench.records.runfolder import RunFolder


def shared_start(config: RunConfig) -> InitialWeights | None:
    """The weights `config`'s runs start from, as each framework's adapter loads them (for the
    dataset's task: its number of outputs); None: each framework's own initialiser."""
    if config.job.init == INIT_FRAMEWORK:
        return None
    _, spec = task_for(config.job)
    return initial_weights(config.job.init, spec, config.job.seed, config.job.input_size)


def record_start(folder: RunFolder, config: RunConfig, start: InitialWeights | None) -> None:
    """With `--init same`, the draw every run starts from (`start`, of `config`), kept in the run
    folder where it does not hold it yet (a new compare, or one stopped before it was written): a
    row's `init_digest` is this file's digest, and `--init` takes it for a later compare."""
    kept = folder.initial_weights
    if start is not None and config.job.init == INIT_SAME and not (kept.exists() or kept.is_symlink()):
        folder.write(kept, weights_file_bytes(start))


def check_start_again(folder: RunFolder, config: RunConfig, done: list[RunResult]) -> InitialWeights | None:
    """Before a resume launches: the start the runs to come take (`shared_start` of `config`, read
    again) is the one the `done` rows took, and the folder's `initial-weights.npz`, where there is
    one, holds it. Either is one UsageError, and nothing is written. Returns the start."""
    start = shared_start(config)
    if start is None:
        return None
    digests = {row.build.init_digest for row in done}
    others = sorted(digest for digest in digests if digest and digest != start.digest)
    if others:
        where = "the reference draw" if config.job.init == INIT_SAME else f"--init {config.job.init}"
        raise UsageError(
            f"{where} holds other weights now (digest {start.digest}) than the rows done started from "
            f"({', '.join(others)}): the runs to come would start elsewhere; restore it or start a new compare"
        )
    kept = folder.initial_weights
    if config.job.init == INIT_SAME and (kept.exists() or kept.is_symlink()):
        recorded = read_weights_file(kept)
        if recorded.digest != start.digest:
            raise UsageError(
                f"{kept} holds weights {recorded.digest}, not the start the runs take ({start.digest}): it was "
                "changed since the compare wrote it; remove it and --resume writes it again"
            )
    return start
