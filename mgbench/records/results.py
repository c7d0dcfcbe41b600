"""`RunResult` and the results file: one JSON object per line, readable by `pandas.read_json(lines=True)`.

A result row is flat: the run's config fields sit at the top level beside the measured figures,
so a DataFrame of a results file has one column per config field and per figure. The file is
rewritten through a temporary file renamed over it (`safe_files.write_file`), so a crash
mid-write never leaves a half-written line.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from mgbench.core.config import RunConfig
from mgbench.core.errors import UnsafeNameError, UsageError
from mgbench.core.safe_files import read_regular, write_file
from mgbench.core.schema import check_fields, parse_json
from mgbench.measure.metrics import defined

Status = Literal["ok", "failed", "timeout", "oom", "unsupported", "not-installed", "interrupted"]
FAILED: tuple[Status, ...] = ("failed", "timeout", "oom", "not-installed")
"""Statuses of a run that did not give its figures, where it could have: a compare holding one exits 1."""
RESULTS_FILE = "results.jsonl"
RENAMED = {"allreduce_step_share": "allreduce_step_fraction", "peak_share": "peak_fraction"}
"""Fields rows written by earlier versions named otherwise: read under their current name."""


@dataclass
class RunResult:
    config: RunConfig
    status: Status
    error: str | None = None
    command: str | None = None
    interpreter: str | None = None
    started_at: str | None = None
    wall_seconds: float | None = None
    environment: dict[str, Any] = field(default_factory=dict)
    framework_versions: dict[str, str] = field(default_factory=dict)
    device_names: list[str] = field(default_factory=list)
    parameters: int | None = None
    unmatched: list[str] = field(default_factory=list)
    """What this framework cannot match of the shared job (`ModelBuilders.unmatched`)."""
    init_digest: str | None = None
    """The digest of the initial weights loaded (None: the framework's own initialiser): rows with
    one digest started from the same weights."""
    attention_kernel: str | None = None
    """What computes a transformer's attention in this run, as the framework chose it for the run's
    device and precision (torch's SDPA backend, Keras' `dot_product_attention` on cuDNN or XLA, a
    framework's own matrix products); None: the model has no attention."""
    startup_seconds: float | None = None
    compiler: str | None = None
    """What compiled the training step (`torch.compile (default)`, `xla`, `xla (always)`); None: nothing."""
    compile_seconds: float | None = None
    """The compile step: the first training step of a compiled run, clocked apart from the timed ones."""
    warmup_steps: int | None = None
    warmup_detected: bool | None = None
    warmup_seconds: float | None = None
    stall_steps: int | None = None
    """Steps after warm-up that stalled (`timing.find_stalls`: an epoch boundary, a loader restart,
    a collection), kept out of the steady window; None in rows written before stalls were counted."""
    stall_seconds: float | None = None
    """The stalled steps' seconds, whole: warm-up, stalls and the window sum to `train_seconds`."""
    steady_steps: int | None = None
    median_step_seconds: float | None = None
    images_per_sec: float | None = None
    """The steady rate: the steady window's images over its seconds (`timing.summarise_steps`);
    with rounds, the median round's (`rounds.combine_rounds`)."""
    images_per_sec_low: float | None = None
    """The slowest rate of the steady window's thirds, over every round: the low end of the
    interval the steady rate was measured in (None in rows written before it was)."""
    images_per_sec_high: float | None = None
    """The fastest rate of the steady window's thirds, over every round."""
    images_per_sec_p10: float | None = None
    images_per_sec_p90: float | None = None
    rounds: int | None = None
    """How many rounds the row's figures come from (`compare --repeat`): its figures are the median
    round's (`mgbench.runner.rounds`); None in rows written before rounds (one round)."""
    round_images_per_sec: list[float] = field(default_factory=list)
    """Each ok round's steady rate, in the order the rounds ran."""
    round_time_to_train_seconds: list[float] = field(default_factory=list)
    """With `--epochs`: each ok round's time to train, in the order the rounds ran."""
    round_time_to_target_seconds: list[float] = field(default_factory=list)
    """With `--target-metric`: each ok round's time to the target (null: not reached)."""
    input_wait_fraction: float | None = None
    loader: str | None = None
    """The framework's native loader that read the real dataset (None: synthetic data)."""
    loader_workers: int | None = None
    """Data-loader worker processes per training process on real data (None: synthetic data)."""
    decoder: str | None = None
    """What decoded the real dataset's images and where the crop ran (`pillow 13.0.0 (host)`,
    `nvJPEG (torchvision.io.decode_jpeg) on cuda:0, crop on device`); None: synthetic data."""
    train_seconds: float | None = None
    eval_seconds: float | None = None
    eval_metrics: dict[str, float] = field(default_factory=dict)
    epoch_metrics: list[dict[str, float]] = field(default_factory=list)
    """Per epoch on real data: epoch, train_loss, train_seconds, images_per_sec (the epoch's
    timed training images over its training seconds, warm-up and stalls in: a per-epoch epoch
    rate without validation), val_loss, val_auc (val_top1 on class folders),
    val_seconds, elapsed_seconds (from the first training step to the end of this validation:
    the time to any target the epoch's validation reached)."""
    test_metrics: dict[str, float] = field(default_factory=dict)
    """With `--epochs`: `evaluate("test")` after the last epoch (loss, auc; top1 on class folders)."""
    time_to_train_seconds: float | None = None
    """With `--epochs`: wall seconds from the first training step to the end of the last
    validation (all epochs, validation included; the test split not)."""
    epoch_images_per_sec: float | None = None
    """With `--epochs`, the epoch rate: the images of every step trained over `time_to_train_seconds`,
    so compile, warm-up, stalls and validation are all in it (the steady rate, `images_per_sec`,
    leaves them out)."""
    time_to_target_seconds: float | None = None
    """With `--target-metric`: wall seconds from the first training step to the end of the
    validation that reached the target (None: not reached in `--epochs` epochs; `warnings` says so)."""
    time_to_target_with_startup_seconds: float | None = None
    """`time_to_target_seconds` from the launch: start-up and a compiled run's compile step included."""
    target_epoch: int | None = None
    """The epoch whose validation reached `--target-metric`, the last one trained."""
    final_loss: float | None = None
    diverged_at_step: int | None = None
    """The training step (1-based, a compiled run's compile step first) whose loss was first no
    finite number: a learning rate too high, or a start holding NaN. The throughput figures still
    hold; the losses from that step on are null, and `warnings` says where they diverged."""
    requested_batch_per_device: int | None = None
    """The batch per device asked for; `batch_per_device` is the one that ran (lower after OOM retries)."""
    oom_retries: int = 0
    """How many times the run was restarted with a halved batch per device after running out of memory."""
    expected_allreduce_seconds: float | None = None
    """Gradient all-reduce time per step predicted from the measured bus bandwidth (bandwidth.json)."""
    allreduce_step_fraction: float | None = None
    """`expected_allreduce_seconds` over the measured median step time."""
    flops_per_image: float | None = None
    """Training FLOPs of one image (forward + backward, a multiply-add = 2) on the reference
    architecture at the row's input size, the same for every framework (`mgbench.records.peak`)."""
    achieved_tflops: float | None = None
    """`flops_per_image` x `images_per_sec` / 1e12: all the row's devices together."""
    peak_tflops: float | None = None
    """One device's peak at the row's precision: the measured dense matmul where the run folder's
    bandwidth.json has it, else the vendor's figure (`peak_source` says which)."""
    peak_source: str | None = None
    peak_fraction: float | None = None
    """`achieved_tflops` over `peak_tflops` x devices (0-1; `peak_share` before it was renamed)."""
    vendor_peak_tflops: float | None = None
    """The datasheet's dense peak of one device at the row's precision (None: not in the table)."""
    activation_bytes_estimate: int | None = None
    """What the forward keeps for the backward per device: the reference architecture's saved
    elements per image x batch per device x bytes per element at the row's precision."""
    timing_method: str | None = None
    """How the per-step times were taken: `cuda events` (no host synchronisation inside the timed
    window) or `per-step sync` (the host waits for the devices after every step)."""
    window_seconds: float | None = None
    """The steady window: the steps after warm-up, end to end; `images_per_sec` is its images over it."""
    host_breakdown: dict[str, float] | None = None
    """Shares of the host's time over the steady window: input_wait, step (the adapter's step
    call), synchronize, loss_read (`mgbench.measure.timing.HOST_PHASES`)."""
    profile: dict[str, Any] | None = None
    """Summary of the `--profile` window (see `mgbench.training.profiling`)."""
    profile_seconds: float | None = None
    """Wall seconds the profiled window cost (its steps, the profiler, writing and reading the trace)."""
    breakdown: dict[str, float] | None = None
    """Shares of the profiled step summing to 1: input_wait, host_to_device, compute,
    communication, idle (mean over devices; see `mgbench.measure.breakdown`)."""
    bottleneck: str | None = None
    """The category that holds the step back, from `breakdown` by `breakdown.bottleneck`."""
    bottleneck_note: str | None = None
    """The next largest share where it is worth a look (`breakdown.bottleneck_note`)."""
    device_ceiling_images_per_sec: float | None = None
    """The global batch over the device's compute per step: the throughput if nothing but the
    device's own work set the pace (`breakdown.device_ceiling`)."""
    ceiling_taken: dict[str, float] | None = None
    """Images/sec that host, input, communication and uneven steps take from the ceiling
    (summing to the ceiling minus `images_per_sec`; `breakdown.Ceiling`)."""
    breakdown_clock: str | None = None
    """`device`: from GPU kernels and copies; `cpu`: from operators on host threads (CPU runs)."""
    peak_memory_bytes: int | None = None
    utilisation_pct: float | None = None
    """Median utilisation over the steady window, every device's samples pooled
    (`mgbench.records.utilisation`): the GPUs' (NVML), or where CPU devices stand in the host's CPU
    (psutil), as `utilisation_source` says; None where the window holds no sample."""
    utilisation_p10_pct: float | None = None
    utilisation_p90_pct: float | None = None
    utilisation_source: str | None = None
    """What the utilisation figures measured: `GPU (NVML)` or `host CPU (psutil, every process on the host)`."""
    memory_used_mib: float | None = None
    """The most memory a device held over the steady window (NVML; the host's memory in use on CPU
    devices): what the device holds, where `peak_memory_bytes` is what the framework allocated."""
    device_utilisation: list[dict[str, Any]] = field(default_factory=list)
    """Per device (`GPU 0`, ..., `host CPU`): `utilisation_pct`, `utilisation_p10_pct`,
    `utilisation_p90_pct` and `memory_used_mib` over the steady window."""
    step_seconds: list[float] = field(default_factory=list)
    input_wait_seconds: list[float] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)
    step_losses: list[float] = field(default_factory=list)
    """The first training losses (compile step included, `driver.STEP_LOSSES_KEPT`), for the
    same-start check between frameworks."""
    warnings: list[str] = field(default_factory=list)
    """What makes a figure of an ok row other than it looks, one line each: a metric written as
    null because it has no value, and why (`metrics.defined`)."""

    @property
    def run_id(self) -> str:
        return self.config.run_id

    def to_record(self) -> dict[str, Any]:
        """Flat dict: config fields first, then `run_id`, `global_batch` and the figures; a figure
        without a value (NaN, infinite: not JSON) is None, and `warnings` says which and why."""
        figures = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "config"}
        record, undefined = defined(
            {**self.config.to_dict(), "run_id": self.run_id, "global_batch": self.config.global_batch, **figures}
        )
        return {**record, "warnings": [*self.warnings, *undefined]}

    @classmethod
    def from_record(cls, record: object) -> RunResult:
        """A row read back (a results line, a run's raw result), which may hold any JSON: an object
        whose fields hold their declared types (`schema.check_fields`), else a UsageError, so no
        later code meets `images_per_sec: "fast"`; its `run_id`, when it holds one, must be the
        one its config gives (else an `UnsafeNameError`)."""
        if not isinstance(record, dict):
            raise UsageError(f"not a result row: {type(record).__name__} instead of an object")
        names = {f.name for f in dataclasses.fields(cls)} - {"config"}
        record = {RENAMED.get(key, key): value for key, value in record.items()}
        config = RunConfig.from_dict(record)
        if record.get("run_id", config.run_id) != config.run_id:
            raise UnsafeNameError(f"run_id {record['run_id']!r} is not its config's ({config.run_id})")
        figures = {k: v for k, v in record.items() if k in names}
        check_fields(figures, cls, "not a result row", null_numbers=True)
        rate = figures.get("images_per_sec")
        if figures.get("status") == "ok" and rate is not None and not rate > 0:
            # Never written by a run (its images over its window); every report divides by it.
            raise UsageError(f"not a result row: an ok row's images_per_sec is {rate}, not a positive number")
        return cls(config=config, **figures)

    def to_json(self) -> str:
        """The row as one line of JSON: strict JSON (`to_record` leaves no NaN to write)."""
        return json.dumps(self.to_record(), allow_nan=False)


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


def append_result(path: Path, result: RunResult) -> None:
    """Add one row to a results file, atomically."""
    append_line(path, result.to_json())


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


def read_results(path: Path) -> list[RunResult]:
    """All whole rows of a results file (empty if it does not exist yet)."""
    return read_result_lines(path)[1]


def write_results(path: Path, results: list[RunResult]) -> None:
    """Replace a results file by exactly these rows, atomically (resume drops rows it reruns)."""
    write_json_atomically(path, "".join(result.to_json() + "\n" for result in results))
