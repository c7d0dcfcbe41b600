"""The run folder's layout and file names, in one place: the runner writes it, reports read it.

A compare's folder holds `results.jsonl` (one row per run, `mgbench.records.results`),
`rounds.jsonl` (one row per round of each run, `mgbench.runner.rounds`),
`compare.json` (the command, options and every planned config), `configs/`, `raw/`, `logs/`,
`traces/` (utilisation samples, columns `TRACE_COLUMNS`), `profiles/`, `bandwidth.json`, the
summary, `charts/` and `report.html`, and `compare.lock` while a verb writes it (`RunFolder.claimed`).

Run folders are shared, so one may come from anywhere, and names read from it (a row's
strategy, a config's device kind) become file names. Every path of the folder is built here,
by `RunFolder.inside`, which refuses one that resolves outside the folder, and every file is
written through `RunFolder.write` or a folder `RunFolder.made` (`mgbench.core.safe_files`):
walked from the folder without following a link, a whole file renamed over the old name. A
run's temporary files go in a folder of its own (`mgbench.runner.scratch`), removed after it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path, PurePath

from mgbench.core.errors import UsageError
from mgbench.core.safe_files import ensure_folder, write_file
from mgbench.records.folder_lock import FolderLock
from mgbench.records.results import RESULTS_FILE

COMPARE_FILE = "compare.json"
ROUNDS_FILE = "rounds.jsonl"
LOCK_FILE = "compare.lock"
CHARTS_DIR = "charts"
REPORT_FILE = "report.html"
TRACE_COLUMNS = (
    "seconds",
    "kind",
    "device",
    "utilization_pct",
    "memory_used_mib",
    "memory_total_mib",
    "sm_clock_mhz",
    "mem_clock_mhz",
)
"""Columns of `traces/<run_id>.csv`: one utilisation sample of one device per line."""


@dataclass(frozen=True)
class RunFolder:
    """Where a compare writes: results, per-run configs, logs and utilisation traces."""

    root: Path

    def inside(self, *parts: str) -> Path:
        """`root/parts`, refused (UsageError) unless it resolves inside the folder, symbolic
        links followed: a name from a folder from elsewhere never leads a write outside it."""
        path = self.root.joinpath(*parts)
        root = self.root.resolve()
        resolved = path.resolve()
        if resolved == root or not resolved.is_relative_to(root):
            raise UsageError(f"{path} leads outside the run folder {self.root}; nothing was written there")
        return path

    def _relative(self, path: Path) -> PurePath:
        return path.relative_to(self.root)

    def write(self, path: Path, data: str | bytes) -> Path:
        """`data` as the whole of `path` (one of this folder's, from `inside`): a new file renamed
        over the old name, walked from the folder without following a link, so that a link or a
        hard link planted there is replaced, not written through, and a full disk leaves the old
        file whole."""
        return write_file(self.root, self._relative(path), data)

    def made(self, path: Path) -> Path:
        """`path` (one of this folder's) as a folder, made where missing, with no link on the way
        from the folder: a writer that opens its own files (a log, a trace, a chart library) is
        then handed a name in it."""
        return ensure_folder(self.root, self._relative(path))

    def with_folder(self, path: Path) -> Path:
        """`path`, its folder `made` first."""
        self.made(path.parent)
        return path

    @property
    def results(self) -> Path:
        return self.inside(RESULTS_FILE)

    @property
    def rounds(self) -> Path:
        """Every round's row (`mgbench.runner.rounds`), `round` added to each."""
        return self.inside(ROUNDS_FILE)

    def config_file(self, run_id: str) -> Path:
        return self.inside("configs", f"{run_id}.json")

    def raw_result(self, run_id: str) -> Path:
        return self.inside("raw", f"{run_id}.json")

    def log(self, run_id: str) -> Path:
        return self.inside("logs", f"{run_id}.log")

    def trace(self, run_id: str) -> Path:
        return self.inside("traces", f"{run_id}.csv")

    def profile_dir(self, run_id: str) -> Path:
        return self.inside("profiles", run_id)

    @property
    def bandwidth(self) -> Path:
        return self.inside("bandwidth.json")

    @property
    def compare_file(self) -> Path:
        return self.inside(COMPARE_FILE)

    @property
    def summary_csv(self) -> Path:
        return self.inside("summary.csv")

    @property
    def summary_md(self) -> Path:
        return self.inside("summary.md")

    @property
    def initial_weights(self) -> Path:
        """The weights every run of `--init same` starts from, as `--init FILE.npz` reads them."""
        return self.inside("initial-weights.npz")

    def chart(self, name: str) -> Path:
        return self.inside(CHARTS_DIR, name)

    @property
    def charts(self) -> Path:
        return self.inside(CHARTS_DIR)

    @property
    def report(self) -> Path:
        return self.inside(REPORT_FILE)

    def lock(self) -> FolderLock:
        """The folder's writer lock (`mgbench.records.folder_lock`), held while in its `with`."""
        return FolderLock(self.inside(LOCK_FILE))

    @contextmanager
    def claimed(self, create: bool = False) -> Iterator[FolderLock | None]:
        """The block as the folder's one writer, for every verb that writes it (compare, run,
        report, project): its lock held, so that another one writing it at the same time is
        refused with one line naming it instead of rewriting files beside it; an OSError is one
        line (`writing`). `create` makes the folder first. A path that is no folder is not
        claimed (None): there is nothing in it to write, and the block's own checks say so."""
        with self.writing():
            if create:
                self.root.mkdir(parents=True, exist_ok=True)
            with self.lock() if self.root.is_dir() else nullcontext() as lock:
                yield lock

    @contextmanager
    def writing(self, hint: str = "") -> Iterator[None]:
        """An OSError while the block writes the folder (disk full, a read-only folder) becomes
        one UsageError line naming the folder, the reason and the file, then `hint`."""
        try:
            yield
        except OSError as error:
            where = f" ({error.filename})" if error.filename else ""
            then = f"; {hint}" if hint else ""
            raise UsageError(f"run folder {self.root}: {error.strerror or error}{where}{then}") from None
