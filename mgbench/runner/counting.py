"""The work per training image of each (model, input size) in a compare, counted once.

The count runs in this process (the orchestrator's interpreter) through the PyTorch family's
counter on the reference architecture (`mgbench.frameworks.pytorch.flops`), so every framework's
row of a model carries the same figure, whatever framework trained it. Where this interpreter
has no torch the rows carry no work figures.

Counting imports torch and builds the model (seconds), so counts are kept in a cache file,
`~/.cache/mgbench/work.json` (`MGBENCH_WORK_CACHE` moves it), keyed by model, input size and the
torchvision version whose architecture was counted: a later compare reads them without torch.

Importing torchvision imports torch's compiler, which makes its cache folder at once
(`$TMPDIR/torchinductor_<user>`) and names it in this process's environment, which every run
launched after would inherit: the count runs with `TORCHINDUCTOR_CACHE_DIR` at `compiler_cache`
and the environment is put back after it.

The count cache's folder is mgbench's cache folder (`cache_folder`): the compilers' caches
(`training.compile_cache`) and the history of run times (`runner.history`) are kept there too.
A folder that cannot be made (a `HOME` that is no folder, a cache path under a file) costs a
count and a cold compile, never a run: this process then keeps its caches in a temporary folder
of its own, removed when it exits, and `cache_fallback` says why once.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict
from importlib import metadata
from pathlib import Path
from typing import Any

from mgbench.core.errors import UsageError
from mgbench.core.models import model_spec
from mgbench.core.safe_files import read_regular
from mgbench.frameworks.pytorch.spec import TORCHVISION
from mgbench.records.peak import ModelWork
from mgbench.records.results import write_json_atomically
from mgbench.training import compile_cache
from mgbench.training.compile_cache import TORCH_CACHE

CACHE_ENV = "MGBENCH_WORK_CACHE"
COMPILER_CACHE_ENV = TORCH_CACHE.variable
WORK_FILE = "work.json"
MATPLOTLIB_ENV = "MPLCONFIGDIR"


def _wanted_path() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "mgbench" / WORK_FILE)


def _unmade(folder: Path) -> str | None:
    """Why `folder` cannot be made and written to (None: it is made, and writable)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        return error.strerror or str(error)
    return None if os.access(folder, os.W_OK | os.X_OK) else "it is not writable"


@functools.cache
def _usable(folder: Path) -> tuple[Path, str | None]:
    """`folder`, made; or where it cannot be made or written, a temporary folder of this process's
    (removed at exit) and why."""
    reason = _unmade(folder)
    if reason is None:
        return folder, None
    fallback = Path(tempfile.mkdtemp(prefix="mgbench-cache-"))
    atexit.register(shutil.rmtree, fallback, ignore_errors=True)
    return fallback, f"cache folder {folder} cannot be made ({reason}): caches kept in {fallback} until mgbench exits"


def cache_folder() -> Path:
    """mgbench's cache folder: the count cache's (`MGBENCH_WORK_CACHE`'s folder, else
    `~/.cache/mgbench`), made; a temporary one where it cannot be (`cache_fallback` says why)."""
    return _usable(_wanted_path().parent)[0]


def cache_fallback() -> str | None:
    """Why the caches are kept in a temporary folder (None: in the cache folder, as named)."""
    return _usable(_wanted_path().parent)[1]


def cache_path() -> Path:
    """The count cache: the file named, in its folder or the temporary one that stands in for it."""
    return cache_folder() / _wanted_path().name


def _read_cache(path: Path) -> dict[str, Any]:
    """The cache's counts by key; a cache that is absent, no regular file (a FIFO is not waited
    on), cut short or not an object holds none: its counts are counted again, and the file replaced."""
    try:
        cached = json.loads(read_regular(path))
    except (OSError, ValueError):
        return {}
    return cached if isinstance(cached, dict) else {}


def compiler_cache() -> str:
    """The folder torch's compiler keeps what it compiled in, for the count and for every run:
    the one the user named (`TORCHINDUCTOR_CACHE_DIR`), else `torchinductor/` beside the count
    cache. Torch's own default is `$TMPDIR/torchinductor_<user>`, which outlives the process, so
    a second process compiling the same step reads what the first compiled; a run's TMPDIR is its
    own and goes with it (`runner.scratch`), where every compiled run would compile from nothing."""
    return os.environ.get(COMPILER_CACHE_ENV) or str(cache_folder() / TORCH_CACHE.name)


def _matplotlib_folder(env: Mapping[str, str]) -> Path:
    """Where matplotlib keeps its configuration and font cache unless `MPLCONFIGDIR` says."""
    config = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or Path.home()) / ".config")
    return Path(config) / "matplotlib"


def cache_environment(env: Mapping[str, str]) -> dict[str, str]:
    """What a run's environment names for caches: each compiler's folder in mgbench's cache folder
    (`compile_cache.variables`; the user's own where `env` names one), and where matplotlib's
    own folder cannot be made, `MPLCONFIGDIR` in mgbench's (matplotlib would fail the run)."""
    variables = compile_cache.variables(cache_folder(), env)
    if not env.get(MATPLOTLIB_ENV) and _unmade(_matplotlib_folder(env)):
        variables[MATPLOTLIB_ENV] = str(cache_folder() / "matplotlib")
    return variables


@contextmanager
def compiler_cache_named() -> Iterator[None]:
    """The block with `compiler_cache` named in this process's environment, the environment as
    it was after it."""
    before = os.environ.get(COMPILER_CACHE_ENV)
    os.environ[COMPILER_CACHE_ENV] = compiler_cache()
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(COMPILER_CACHE_ENV, None)
        else:
            os.environ[COMPILER_CACHE_ENV] = before


@functools.cache
def model_work(model: str, image_size: int) -> ModelWork | None:
    """FLOPs and saved activations per image of `model` at `image_size` px (None: no torch here,
    or a model torchvision does not build, as a plugin's own)."""
    if model not in TORCHVISION.models:
        return None
    try:
        key = f"{model}@{image_size} torchvision {metadata.version('torchvision')}"
    except metadata.PackageNotFoundError:
        return None
    path = cache_path()
    cached = _read_cache(path)
    if key in cached:
        try:
            return ModelWork.from_record(cached[key])
        except UsageError:  # another version's entry, or a damaged one: counted again
            pass
    with compiler_cache_named():
        try:
            from mgbench.frameworks.pytorch.flops import count_work
        except ImportError:
            return None
        work = count_work(model_spec(model), image_size)
    try:
        write_json_atomically(path, json.dumps({**_read_cache(path), key: asdict(work)}, indent=1))
    except OSError:  # a cache that cannot be written costs only the next compare's count
        pass
    return work
