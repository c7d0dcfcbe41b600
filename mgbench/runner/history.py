"""How long each run took on this machine, kept in mgbench's cache folder for the next compare's estimate.

Each round a compare runs ends with its wall time (its launch to its row, out-of-memory restarts
included) written here, under the run's whole configuration: framework, strategy, device kind and
count, and the job (model, batch, steps, precision, dataset, ...). A later compare of the same
runs on the same machine estimates its time from them (`runner.estimate`). Only the last
`KEPT` rounds of a run are kept, each with whether a compile cache served it (`warm`, `cold`,
null: `training.compile_cache`), since a cold round of a compiled run takes a minute more.

The file is a cache: one that is absent, damaged or of another shape holds no times, and one that
cannot be written costs the next compare its estimate, never a run.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mgbench.core.config import RunConfig
from mgbench.core.safe_files import read_regular
from mgbench.records.results import write_json_atomically
from mgbench.runner.counting import cache_folder

HISTORY_FILE = "run-times.json"
KEPT = 5
"""Rounds kept per run: enough for a median, few enough to follow a machine that changed."""


def run_key(config: RunConfig) -> str:
    """The run's name and a digest of its whole configuration: two runs share a key only where
    every setting of the job, the framework, the strategy and the devices is the same."""
    digest = hashlib.sha256(config.to_json().encode()).hexdigest()[:16]
    return f"{config.run_id} {digest}"


@dataclass(frozen=True)
class Round:
    """One recorded round: its wall seconds and whether a compile cache served it."""

    seconds: float
    compile_cache: str | None = None

    @classmethod
    def parse(cls, record: Any) -> Round | None:
        if not isinstance(record, dict) or not isinstance(record.get("seconds"), int | float):
            return None
        cache = record.get("compile_cache")
        return cls(float(record["seconds"]), cache if cache in ("warm", "cold") else None)


class RunHistory:
    """The recorded rounds of runs on this machine, by `run_key`."""

    def __init__(self, path: Path, rounds: dict[str, list[Round]]):
        self.path = path
        self.rounds = rounds

    @classmethod
    def read(cls, path: Path | None = None) -> RunHistory:
        path = path or cache_folder() / HISTORY_FILE
        try:
            stored = json.loads(read_regular(path))
        except (OSError, ValueError):
            stored = {}
        rounds: dict[str, list[Round]] = {}
        for key, records in (stored if isinstance(stored, dict) else {}).items():
            parsed = (
                [found for record in records if (found := Round.parse(record))] if isinstance(records, list) else []
            )
            if parsed:
                rounds[key] = parsed
        return cls(path, rounds)

    def of(self, config: RunConfig) -> list[Round]:
        return self.rounds.get(run_key(config), [])

    def record(self, config: RunConfig, taken: Round) -> None:
        """One more round of `config`, kept with the last `KEPT` of it, the file rewritten; the
        file is read again first, so that rounds another compare recorded meanwhile stay."""
        stored = RunHistory.read(self.path).rounds
        key = run_key(config)
        stored[key] = [*stored.get(key, []), taken][-KEPT:]
        self.rounds[key] = stored[key]
        text = json.dumps({k: [vars(r) for r in rounds] for k, rounds in stored.items()}, indent=1)
        try:
            write_json_atomically(self.path, text)
        except OSError:  # a history that cannot be written costs only the next estimate
            pass
