"""The folders compilers keep what they compiled in, shared by every run on a machine, and whether
a run's compile step was served from them.

A run's TMPDIR is its own and goes with it (`runner.scratch`), and that is where torch's compiler
keeps its cache by default; JAX and TensorFlow keep none on disk unless told. So the runner names
a folder for each compiler in every run's environment (`variables`), beside mgbench's other
caches, and a second round or a second compare of the same job reads what the first compiled
instead of compiling again (Keras over JAX: a minute of a DenseNet-121 round on one H100).

Whether a run's compile was served is read from the folders themselves (`CacheWatch`): a compiler
writes an entry for what it compiled and nothing for what it read, so a compile step after which
the folders hold entries they did not hold before it was compiled (`cold`, at least in part), one
after which they hold the same entries, none new, was read from the cache (`warm`). Listing the
folders takes as long as they are large, so only the primary process lists them, and never inside
a timed span: once after setup, before the first step, and once after training, where an entry is
the compile step's if it is new and was written by the time the step ended (its modification
time): the compiles that come later in a run (the evaluation's own graphs, a last short batch)
write entries too, and say nothing of what served the compile step.

With `COLD_ENV` set (`compare --cold-cache`, recorded in the compare's plan so that a resumed
compare sets it again: `cold_environment`), each run's compilers get empty folders in its own
TMPDIR instead (`cold_variables`): every round compiles from nothing, and the shared caches are
neither read nor written.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

CacheState = Literal["warm", "cold"]
COLD_ENV = "MGBENCH_COLD_CACHE"
"""Set (to anything but empty) in a run's environment: its compilers start from empty caches."""
COLD_FOLDER = "mgbench-cold-cache"
"""The folder in a run's TMPDIR holding its compilers' empty caches under `COLD_ENV`."""


@dataclass(frozen=True)
class CompileCache:
    """One compiler's on-disk cache: the variable naming its folder, the folder's name under
    mgbench's cache folder, and the variables that make the compiler keep every compile there."""

    name: str
    variable: str
    settings: Mapping[str, str] = field(default_factory=dict)

    def folder(self, env: Mapping[str, str]) -> Path | None:
        value = env.get(self.variable)
        return Path(value) if value else None


CACHES = (
    CompileCache("torchinductor", "TORCHINDUCTOR_CACHE_DIR"),
    CompileCache(
        "jax",
        "JAX_COMPILATION_CACHE_DIR",
        # JAX keeps only compiles of a second or more by default, and may raise a size floor:
        # every compiled step is kept, so a warm round compiles nothing.
        {"JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0", "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1"},
    ),
)


def variables(root: Path, env: Mapping[str, str]) -> dict[str, str]:
    """Each compiler's cache folder under `root` (mgbench's cache folder) and its settings, for a
    run's environment; a folder the user named in `env` stands, and so does a setting."""
    named = {}
    for cache in CACHES:
        named[cache.variable] = env.get(cache.variable) or str(root / cache.name)
        named.update({name: env.get(name) or value for name, value in cache.settings.items()})
    return named


def cold_asked(env: Mapping[str, str] = os.environ) -> bool:
    """Whether `env` sets `COLD_ENV` (to anything but empty)."""
    return bool(env.get(COLD_ENV))


@contextmanager
def cold_environment(cold: bool) -> Iterator[None]:
    """With `cold` (a compare's plan asking for `--cold-cache`), `COLD_ENV` set for the block, so
    that every run launched in it compiles from empty caches of its own; the environment as it was
    after."""
    before = os.environ.get(COLD_ENV)
    if cold:
        os.environ[COLD_ENV] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(COLD_ENV, None)
        else:
            os.environ[COLD_ENV] = before


def cold_variables(env: Mapping[str, str]) -> dict[str, str]:
    """Under `COLD_ENV`, each compiler's cache as an empty folder of its own in the run's TMPDIR
    (removed with it); without it, nothing to change."""
    if not cold_asked(env) or not env.get("TMPDIR"):
        return {}
    return {cache.variable: str(Path(env["TMPDIR"]) / COLD_FOLDER / cache.name) for cache in CACHES}


def _entries(folder: Path) -> set[str]:
    """The files under `folder` (relative paths), lock files left out: a compiler takes a lock to
    read an entry as well as to write one."""
    found = set()
    for parent, _, files in os.walk(folder):
        for name in files:
            if not name.endswith(".lock") and "lock" not in Path(parent).relative_to(folder).parts:
                found.add(str(Path(parent, name).relative_to(folder)))
    return found


@dataclass(frozen=True)
class CacheWatch:
    """The entries of the compile caches a run's environment names, taken before it compiles."""

    folders: tuple[Path, ...]
    before: frozenset[str]

    @classmethod
    def start(cls, env: Mapping[str, str] = os.environ) -> CacheWatch:
        folders = tuple(folder for cache in CACHES if (folder := cache.folder(env)) is not None)
        return cls(folders, frozenset(cls._all(folders)))

    @staticmethod
    def _all(folders: tuple[Path, ...]) -> set[str]:
        return {f"{folder}/{entry}" for folder in folders for entry in _entries(folder)}

    def state(self, compiled_by: float) -> CacheState | None:
        """`cold`: the caches gained an entry since `start` that was written by `compiled_by`
        (epoch seconds: when the compile step ended), so the compile step compiled something and
        kept it; `warm`: none, and they hold entries (what the step ran was read from them); None:
        they hold none (no cache kept anything of this run). Read after the run, so an entry
        written after the compile step (a later compile's) counts for neither."""
        now = self._all(self.folders)
        if any(_written_by(Path(entry), compiled_by) for entry in now - self.before):
            return "cold"
        return "warm" if now else None


def _written_by(path: Path, moment: float) -> bool:
    """Whether the file `path` was last written at `moment` (epoch seconds) or before (a file
    system stamps a file no later than the clock reads); a file removed since it was listed (a
    compiler's temporary one) was not."""
    try:
        return path.stat().st_mtime <= moment
    except FileNotFoundError:
        return False
