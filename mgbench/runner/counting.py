"""The work per training sample of each (model, input size) in a compare, as its model declares it.

Each model declares how its work is known (`ModelSpec.work`, `core.work`); this module asks the
declaration, so every framework's row of a model carries the same figure, whatever framework
trained it. A closed form computes itself; a count on the reference architecture runs where
that architecture is built, in its framework's environment (`python -m` the declared counter,
PyTorch's `frameworks/pytorch/flops.py` for the catalogue's networks): this process imports no
framework. Where that environment has no such framework the rows carry no work figures.

Counting imports torch and builds the model (seconds), so counts are kept in a cache file,
`~/.cache/mgbench/work.json` (`MGBENCH_WORK_CACHE` moves it), keyed by model, input size and the
version of the package whose architecture was counted (torchvision), read in that environment
without importing it: a later compare reads them without torch.

Importing torchvision imports torch's compiler, which makes its cache folder at once (by default
`$TMPDIR/torchinductor_<user>`): the counter runs with the caches every run gets
(`cache_environment`), so the folder it makes is the one runs share.

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
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from mgbench.core.errors import UsageError
from mgbench.core.models import model_spec
from mgbench.core.safe_files import read_regular
from mgbench.core.schema import parse_json
from mgbench.core.work import CountedOnReference, ModelWork
from mgbench.frameworks.registry import framework_spec
from mgbench.records.results import write_json_atomically
from mgbench.runner.launch import isolated_environment
from mgbench.runner.venvs import inspect_installation
from mgbench.training import compile_cache

CACHE_ENV = "MGBENCH_WORK_CACHE"
WORK_FILE = "work.json"
MATPLOTLIB_ENV = "MPLCONFIGDIR"
COUNT_TIMEOUT_SECONDS = 600
"""Ample for a counter that builds a model on the meta device (seconds) after importing its framework."""


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


@functools.cache
def model_work(model: str, input_size: int) -> ModelWork | None:
    """FLOPs and saved activations per sample of `model` at `input_size`, as its catalogue entry
    declares them (None: it declares none, or its counter cannot count here)."""
    work = model_spec(model).work
    return None if work is None else work.per_sample(model, input_size, counted_on_reference)


def counted_on_reference(reference: CountedOnReference, model: str, input_size: int) -> ModelWork | None:
    """`model`'s work at `input_size` counted on `reference`'s architecture: read from the cache,
    else counted in the reference framework's environment and kept there (None: that environment
    lacks the framework, or the count failed)."""
    installation = inspect_installation(framework_spec(reference.framework))
    version = installation.versions.get(reference.architecture)
    if not installation.installed or version is None:
        return None
    key = f"{model}@{input_size} {reference.architecture} {version}"
    path = cache_path()
    cached = _read_cache(path)
    if key in cached:
        try:
            return ModelWork.from_record(cached[key])
        except UsageError:  # another version's entry, or a damaged one: counted again
            pass
    work = _count(reference, installation.interpreter, model, input_size)
    if work is None:
        return None
    try:
        write_json_atomically(path, json.dumps({**_read_cache(path), key: asdict(work)}, indent=1))
    except OSError:  # a cache that cannot be written costs only the next compare's count
        pass
    return work


def _count(reference: CountedOnReference, interpreter: str, model: str, input_size: int) -> ModelWork | None:
    """The reference's counter run in `interpreter`, with the caches a run gets; what it prints,
    read back checked (None: it failed, ran past `COUNT_TIMEOUT_SECONDS` or printed no count)."""
    command = [interpreter, "-m", reference.counter, model, str(input_size)]
    env = isolated_environment({**os.environ, **cache_environment(os.environ)})
    try:
        done = subprocess.run(
            command, env=env, capture_output=True, text=True, timeout=COUNT_TIMEOUT_SECONDS, check=True
        )
        return ModelWork.from_record(parse_json(done.stdout, "a count of work"))
    except (subprocess.SubprocessError, OSError, UsageError):
        return None
