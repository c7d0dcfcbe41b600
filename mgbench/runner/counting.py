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
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterator
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

CACHE_ENV = "MGBENCH_WORK_CACHE"
COMPILER_CACHE_ENV = "TORCHINDUCTOR_CACHE_DIR"


def cache_path() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "mgbench" / "work.json")


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
    return os.environ.get(COMPILER_CACHE_ENV) or str(cache_path().parent / "torchinductor")


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
