"""`RunResult` and the results file: one JSON object per line, readable by `pandas.read_json(lines=True)`.

A result row is written flat: the run's config fields sit at the top level beside the measured
figures (each part of them, `records.figures`, in its place), so a DataFrame of a results file
has one column per config field and per figure. The file has one writer,
`records.finished.write_results`, which finishes the rows (their combined rounds and scaling
figures) and rewrites it through a temporary file renamed over it (`safe_files.write_file`), so
a crash mid-write never leaves a half-written line.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, NamedTuple, TypeVar, cast

from mgbench.core.config import RunConfig
from mgbench.core.errors import UnsafeNameError, UsageError
from mgbench.core.safe_files import read_regular, write_file
from mgbench.core.schema import check_fields, field_types, parse_json
from mgbench.measure.metrics import defined
from mgbench.records.figures import (
    Build,
    Compilation,
    EpochFigures,
    InputFigures,
    Limits,
    OomRetries,
    Origin,
    ProfileFigures,
    Rounds,
    ScalingFigures,
    StepSeries,
    StepTiming,
    UtilisationFigures,
)


class Status(StrEnum):
    """How a run ended. A row holds it as its string (`ok`, `not-installed`), which a member
    equals, so rows and frames written before read alike."""

    OK = "ok"
    FAILED = "failed"
    TIMEOUT = "timeout"
    OOM = "oom"
    UNSUPPORTED = "unsupported"
    NOT_INSTALLED = "not-installed"
    INTERRUPTED = "interrupted"

    @property
    def failed(self) -> bool:
        """The run did not give its figures where it could have: a compare holding one exits 1."""
        return self in (Status.FAILED, Status.TIMEOUT, Status.OOM, Status.NOT_INSTALLED)


RESULTS_FILE = "results.jsonl"


@dataclass(slots=True)
class RunResult:
    """One run's row: its config, how it ended, and its figures, the measured ones in parts
    (`records.figures`) that `to_record` writes flat."""

    config: RunConfig
    status: Status
    error: str | None = None
    origin: Origin = field(default_factory=Origin)
    build: Build = field(default_factory=Build)
    startup_seconds: float | None = None
    compiled: Compilation = field(default_factory=Compilation)
    timing: StepTiming = field(default_factory=StepTiming)
    repeats: Rounds = field(default_factory=Rounds)
    input: InputFigures = field(default_factory=InputFigures)
    train_seconds: float | None = None
    eval_seconds: float | None = None
    eval_metrics: dict[str, float] = field(default_factory=dict)
    by_epoch: EpochFigures = field(default_factory=EpochFigures)
    final_loss: float | None = None
    diverged_at_step: int | None = None
    """The training step (1-based, a compiled run's compile step first) whose loss was first no
    finite number: a learning rate too high, or a start holding NaN. The throughput figures still
    hold; the losses from that step on are null, and `warnings` says where they diverged."""
    retries: OomRetries = field(default_factory=OomRetries)
    limit: Limits = field(default_factory=Limits)
    timing_method: str | None = None
    """How the per-step times were taken: `cuda events` (no host synchronisation inside the timed
    window) or `per-step sync` (the host waits for the devices after every step)."""
    window_seconds: float | None = None
    """The steady window: the steps after warm-up, end to end; `samples_per_sec` is its samples over it."""
    host_breakdown: dict[str, float] | None = None
    """Shares of the host's time over the steady window: input_wait, step (the adapter's step
    call), synchronize, loss_read (`mgbench.measure.timing.HOST_PHASES`)."""
    profiled: ProfileFigures = field(default_factory=ProfileFigures)
    peak_memory_bytes: int | None = None
    """The most memory the framework allocated on any of the run's devices (on CPU devices the
    primary process's peak resident host memory)."""
    peak_memory_reserved_bytes: int | None = None
    """The most memory the framework's allocator held from any of the run's GPUs, allocated or
    cached (torch's `max_memory_reserved`, JAX's `peak_pool_bytes`); None on CPU devices and
    where the framework does not say."""
    utilisation: UtilisationFigures = field(default_factory=UtilisationFigures)
    series: StepSeries = field(default_factory=StepSeries)
    warnings: list[str] = field(default_factory=list)
    """What makes a figure of an ok row other than it looks, one line each: a metric written as
    null because it has no value, and why (`metrics.defined`)."""
    scaling: ScalingFigures = field(default_factory=ScalingFigures)
    """Figures set against the other rows of its run folder (`records.scaling`), computed each time
    the results file is written (`records.finished`); last in the row, where a compare of an
    earlier version added them as it ended."""

    def __post_init__(self) -> None:
        self.status = Status(self.status)

    @property
    def run_id(self) -> str:
        return self.config.run_id

    @classmethod
    def flat(cls, config: RunConfig, status: Status | str, **figures: Any) -> RunResult:
        """A row from its figures named as its record names them (`samples_per_sec=...`), each put
        in its part."""
        parts = {
            name: part(**{key: figures.pop(key) for key in fields_of(part) if key in figures})
            for name, part in PARTS.items()
        }
        return cls(config, Status(status), **parts, **figures)

    def to_record(self) -> dict[str, Any]:
        """Flat dict: config fields first, then `run_id`, `global_batch` and the figures, each
        part's in its place; a figure without a value (NaN, infinite: not JSON) is None, and
        `warnings` says which and why."""
        figures: dict[str, Any] = {}
        for name in FIELDS:
            value = getattr(self, name)
            figures |= {key: getattr(value, key) for key in fields_of(PARTS[name])} if name in PARTS else {name: value}
        record, undefined = defined(
            {**self.config.to_dict(), "run_id": self.run_id, "global_batch": self.config.global_batch, **figures}
        )
        return {**record, "warnings": [*self.warnings, *undefined]}

    @classmethod
    def from_record(cls, record: object) -> RunResult:
        """A row read back (a results line, a run's raw result), which may hold any JSON: an object
        whose fields hold their declared types (`schema.check_fields`), else a UsageError, so no
        later code meets `samples_per_sec: "fast"`; its `run_id`, when it holds one, must be the
        one its config gives (else an `UnsafeNameError`)."""
        if not isinstance(record, dict):
            raise UsageError(f"not a result row: {type(record).__name__} instead of an object")
        record = current_names(record)
        config = RunConfig.from_dict(record)
        if record.get("run_id", config.run_id) != config.run_id:
            raise UnsafeNameError(f"run_id {record['run_id']!r} is not its config's ({config.run_id})")
        own = {key: value for key, value in record.items() if key in FIELDS and key not in PARTS}
        check_fields(own, cls, "not a result row", null_numbers=True)
        parts = {}
        for name, part in PARTS.items():
            values = {key: record[key] for key in fields_of(part) if key in record}
            check_fields(values, part, "not a result row", null_numbers=True)
            parts[name] = part(**values)
        if "status" not in own:
            raise UsageError("not a result row: it has no status")
        rate = parts["timing"].samples_per_sec
        if own["status"] == Status.OK and not _positive_figure(rate):
            # Never written by a run (its samples over its window); every report divides by it.
            raise UsageError(f"not a result row: an ok row's samples_per_sec is {rate}, not a positive number")
        return cls(config=config, **own, **parts)

    def to_json(self) -> str:
        """The row as one line of JSON: strict JSON (`to_record` leaves no NaN to write)."""
        return json.dumps(self.to_record(), allow_nan=False)


def _positive_figure(value: float | None) -> bool:
    """Whether `value` is a finite number above 0 (None, 0, infinity and an int too large for a
    float are not)."""
    return value is not None and abs(value) <= sys.float_info.max and value > 0


def fields_of(part: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(part))


FIELDS = tuple(name for name in fields_of(RunResult) if name != "config")
"""The row's own fields, in order: its figures and its parts."""
PARTS: dict[str, type] = {
    name: field_types(RunResult)[name] for name in FIELDS if dataclasses.is_dataclass(field_types(RunResult)[name])
}
"""The row's parts by field: each writes its fields flat in its place (`records.figures`)."""


def figure_types() -> dict[str, Any]:
    """Every figure a row writes, flat, with its declared type."""
    types: dict[str, Any] = {}
    for name in FIELDS:
        types |= field_types(PARTS[name]) if name in PARTS else {name: field_types(RunResult)[name]}
    return types


RENAMED = {
    "allreduce_step_share": "allreduce_step_fraction",
    "peak_share": "peak_fraction",
    "flops_per_image": "flops_per_sample",
}
"""Fields rows written by earlier versions named otherwise: read under their current name."""
OLD_RATE, RATE = "images_per_sec", "samples_per_sec"
"""The rate was images per second before a sample could be a token sequence: every figure named
by it (`images_per_sec_low`, `round_images_per_sec`, a projection's `images_per_sec_per_node`) is
samples per second now, and reports show it in the unit the model declares."""


Value = TypeVar("Value")


def current_name(name: str) -> str:
    """The name a field an earlier version wrote (`RENAMED`, `OLD_RATE`) is read under now."""
    return RENAMED.get(name) or name.replace(OLD_RATE, RATE)


def current_names(value: Value) -> Value:
    """A JSON value an earlier version wrote (a row, `projection.json`), every object's keys at any
    depth under their current names (`current_name`): readers meet one spelling of each field."""
    if isinstance(value, dict):
        return cast(Value, {current_name(key): current_names(item) for key, item in value.items()})
    if isinstance(value, list):
        return cast(Value, [current_names(item) for item in value])
    return value


def write_json_atomically(path: Path, text: str | bytes) -> None:
    """Write `path` whole through a new file beside it renamed over the name
    (`safe_files.write_file`): a crash or a full disk leaves the old file whole, and a link or a
    hard link planted at the name is replaced, never written through.

    The folder is made when missing (a cache's first write); one inside a run folder is checked
    by `RunFolder.inside` and `RunFolder.made`. The file is created as `open` creates files
    (mode 0666 less the umask), so it keeps the mode every other file of the folder has. An
    OSError (a full disk) names the file that was being written, not the temporary one.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    write_file(path.parent, path.name, text)


def append_line(path: Path, line: str) -> None:
    """Add one line of JSON to a file of lines, atomically; its other lines stay as they are, byte for byte."""
    existing = results_file_bytes(path)
    if existing and not existing.endswith(b"\n"):
        existing += b"\n"
    write_json_atomically(path, existing + (line + "\n").encode())


def results_file_bytes(path: Path) -> bytes:
    """What a results file holds (nothing where there is none yet); a name that holds no regular
    file (a FIFO, which would hold the read) is one UsageError."""
    try:
        return read_regular(path)
    except FileNotFoundError:
        return b""
    except OSError as error:
        raise UsageError(f"{path} cannot be read: {error.strerror or error}") from None


def read_result_lines(path: Path) -> tuple[list[dict[str, Any]], list[RunResult], int]:
    """The records and rows of a results file, and how many lines could not be read.

    A line that is no whole row is skipped and counted rather than raised, whatever is wrong
    with it: cut short (a copy, a crash of another writer), not UTF-8, not JSON within
    `schema.MAX_DEPTH`, not an object, or a field not of its declared type. Reports and resumes
    keep every row that is whole, and no later code meets a figure of another type; each line
    is read apart, so one bad byte costs one line, not the file. A row whose names could not
    have been written by mgbench (`UnsafeNameError`) is raised, with its line.
    """
    records, results, unreadable = [], [], 0
    lines = results_file_bytes(path).splitlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = parse_json(line, f"{path} line {number}")
            results.append(RunResult.from_record(record))
        except UnsafeNameError as error:
            raise UnsafeNameError(f"{path} line {number}: {error}") from None
        except UsageError:
            unreadable += 1
            continue
        records.append(record)
    return records, results, unreadable


class RunRows(NamedTuple):
    """A results file read as one row per run (`read_run_rows`)."""

    records: list[dict[str, Any]]
    results: list[RunResult]
    unreadable: int
    """Lines that are no whole row (`read_result_lines`)."""
    replaced: int
    """Rows left out because their run has a later row."""


def read_run_rows(path: Path) -> RunRows:
    """The rows of a results file, one per run: where a run has several rows (an earlier
    version's `mgbench run --out DIR` given twice appended its row again; files joined), its
    last, in the place of its first. Every reader of a results file sees each run once, so no
    report counts a run twice nor sets two of its rows against each other."""
    records, results, unreadable = read_result_lines(path)
    last = {result.run_id: index for index, result in enumerate(results)}
    kept = list(last.values())
    return RunRows([records[i] for i in kept], [results[i] for i in kept], unreadable, len(results) - len(kept))


def read_results(path: Path) -> list[RunResult]:
    """The rows of a results file, one per run (`read_run_rows`; empty if it does not exist yet)."""
    return read_run_rows(path).results
