"""The work per training image of each (model, input size) in a compare, counted once.

The count runs in this process (the orchestrator's interpreter) through the PyTorch family's
counter on the reference architecture (`mgbench.frameworks.pytorch.flops`), so every framework's
row of a model carries the same figure, whatever framework trained it. Where this interpreter
has no torch the rows carry no work figures.

Counting imports torch and builds the model (seconds), so counts are kept in a cache file,
`~/.cache/mgbench/work.json` (`MGBENCH_WORK_CACHE` moves it), keyed by model, input size and the
torchvision version whose architecture was counted: a later compare reads them without torch.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import asdict
from importlib import metadata
from pathlib import Path

from mgbench.common.models import model_spec
from mgbench.common.results import write_json_atomically
from mgbench.common.work import ModelWork

CACHE_ENV = "MGBENCH_WORK_CACHE"


def cache_path() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "mgbench" / "work.json")


def _read_cache(path: Path) -> dict[str, dict[str, float]]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):  # absent, unreadable or cut short: count again
        return {}


@functools.cache
def model_work(model: str, image_size: int) -> ModelWork | None:
    """FLOPs and saved activations per image of `model` at `image_size` px (None: no torch here)."""
    try:
        key = f"{model}@{image_size} torchvision {metadata.version('torchvision')}"
    except metadata.PackageNotFoundError:
        return None
    path = cache_path()
    cached = _read_cache(path)
    if key in cached:
        return ModelWork(**cached[key])
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
