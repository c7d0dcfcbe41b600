"""The parts of a result row (`RunResult`): its figures grouped by what measured them.

A row is written flat (`RunResult.to_record`): each part's fields stand at the top level, in
the order of the row's fields with each part's in its place, so a results file reads as it
always has, and pandas reads a column per figure. Each part is a dataclass whose annotations
are the schema its fields are read back against (`schema.check_fields`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class Origin:
    """Where and how the run was started: the command, the interpreter, when and for how long, the host it ran on, the framework's versions and the devices it drove."""

    command: str | None = None
    interpreter: str | None = None
    started_at: str | None = None
    wall_seconds: float | None = None
    environment: dict[str, Any] = field(default_factory=dict)
    framework_versions: dict[str, str] = field(default_factory=dict)
    device_names: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Build:
    """What the adapter built: the model's trainable parameters, what of the shared job the framework cannot match, the weights it started from and the kernel its attention runs in."""

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
    objective: str | None = None
    """The objective the run trained towards, as its dataset fits the model's (`core.objective`:
    `multi_label_bce`, `softmax_cross_entropy`); None in rows written before rows named it."""
    optimization: dict[str, Any] | None = None
    """The optimizer and learning-rate schedule it stepped with, each its kind and hyperparameters
    (`Optimization.record`); None in rows written before rows named them."""


@dataclass(slots=True)
class Compilation:
    """What compiled the training step, its compile step's seconds, and whether a cache served it."""

    compiler: str | None = None
    """What compiled the training step (`torch.compile (default)`, `xla`, `xla (always)`); None: nothing."""
    compile_seconds: float | None = None
    """The compile step: the first training step of a compiled run, clocked apart from the timed ones."""
    compile_cache: str | None = None
    """Whether the compilers' on-disk caches served the compile step (`training.compile_cache`):
    `warm` (read from them: `compile_seconds` is the load), `cold` (compiled, and kept for the next
    run); None: nothing compiled, or no cache kept it."""


@dataclass(slots=True)
class StepTiming:
    """The timed steps split by `timing.summarise_steps`: warm-up, stalls, the steady window and its rate, with the rate's interval and spread."""

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
    samples_per_sec: float | None = None
    """The steady rate: the steady window's samples over its seconds (`timing.summarise_steps`);
    with rounds, the median round's (`finished.combine_rounds`)."""
    samples_per_sec_low: float | None = None
    """The slowest rate of the steady window's thirds, over every round: the low end of the
    interval the steady rate was measured in (None in rows written before it was)."""
    samples_per_sec_high: float | None = None
    """The fastest rate of the steady window's thirds, over every round."""
    samples_per_sec_p10: float | None = None
    samples_per_sec_p90: float | None = None


@dataclass(slots=True)
class Rounds:
    """The rounds a row's figures come from (`compare --repeat`, `mgbench.runner.rounds`)."""

    rounds: int | None = None
    """How many rounds the row's figures come from (`compare --repeat`): its figures are the median
    round's (`mgbench.runner.rounds`); None in rows written before rounds (one round)."""
    round_samples_per_sec: list[float | None] = field(default_factory=list)
    """Each ok round's steady rate, in the order the rounds ran (null: the round measured none)."""
    round_time_to_train_seconds: list[float | None] = field(default_factory=list)
    """With `--epochs`: each ok round's time to train, in the order the rounds ran (null: none recorded)."""
    round_time_to_target_seconds: list[float | None] = field(default_factory=list)
    """With `--target-metric`: each ok round's time to the target (null: not reached)."""


@dataclass(slots=True)
class ScalingFigures:
    """The row set against the rows beside it (`records.scaling`): its speed-up over the smallest
    device count of its framework, strategy and job, that over the device ratio, and its rate per
    device. None where the row did not finish, and in rows written before a row held them."""

    speedup: float | None = None
    scaling_efficiency_fraction: float | None = None
    samples_per_sec_per_device: float | None = None


@dataclass(slots=True)
class InputFigures:
    """What fed the steps: the share of the steady window spent waiting for input, and on real data the loader, its workers and the decoder."""

    input_wait_fraction: float | None = None
    loader: str | None = None
    """The framework's native loader that read the real dataset (None: synthetic data)."""
    loader_workers: int | None = None
    """Data-loader worker processes per training process on real data (None: synthetic data)."""
    decoder: str | None = None
    """What decoded the real dataset's images and where the crop ran (`pillow 13.0.0 (host)`,
    `nvJPEG (torchvision.io.decode_jpeg) on cuda:0, crop on device`); None: synthetic data."""


@dataclass(slots=True)
class EpochFigures:
    """With `--epochs`: each epoch's figures, the test split's, and the times to train and to the target."""

    epoch_metrics: list[dict[str, float]] = field(default_factory=list)
    """Per epoch on real data: epoch, train_loss, train_seconds, samples_per_sec (the epoch's
    timed training samples over its training seconds, warm-up and stalls in: a per-epoch epoch
    rate without validation), val_loss, val_auc (val_top1 on class folders),
    val_seconds, elapsed_seconds (from the first training step to the end of this validation:
    the time to any target the epoch's validation reached)."""
    test_metrics: dict[str, float] = field(default_factory=dict)
    """With `--epochs`: `evaluate("test")` after the last epoch (loss, auc; top1 on class folders)."""
    time_to_train_seconds: float | None = None
    """With `--epochs`: wall seconds from the first training step to the end of the last
    validation (all epochs, validation included; the test split not)."""
    epoch_samples_per_sec: float | None = None
    """With `--epochs`, the epoch rate: the samples of every step trained over `time_to_train_seconds`,
    so compile, warm-up, stalls and validation are all in it (the steady rate, `samples_per_sec`,
    leaves them out)."""
    time_to_target_seconds: float | None = None
    """With `--target-metric`: wall seconds from the first training step to the end of the
    validation that reached the target (None: not reached in `--epochs` epochs; `warnings` says so)."""
    time_to_target_with_startup_seconds: float | None = None
    """`time_to_target_seconds` from the launch: start-up and a compiled run's compile step included."""
    target_epoch: int | None = None
    """The epoch whose validation reached `--target-metric`, the last one trained."""


@dataclass(slots=True)
class OomRetries:
    """The batch per device asked for, and how often the run was restarted with half of it after running out of memory."""

    requested_batch_per_device: int | None = None
    """The batch per device asked for; `batch_per_device` is the one that ran (lower after OOM retries)."""
    oom_retries: int = 0
    """How many times the run was restarted with a halved batch per device after running out of memory."""


@dataclass(slots=True)
class Limits:
    """How close the row is to what its links and its device can do: the all-reduce's share of a step, the step's work and the device's peak."""

    expected_allreduce_seconds: float | None = None
    """The time per step of the collectives the strategy declares (DDP: its gradient all-reduce),
    predicted from the measured bus bandwidth (bandwidth.json); None where it declares none."""
    allreduce_step_fraction: float | None = None
    """`expected_allreduce_seconds` over the measured median step time."""
    flops_per_sample: float | None = None
    """Training FLOPs of one sample (forward + backward, a multiply-add = 2) on the reference
    architecture at the row's input size, the same for every framework (`mgbench.records.peak`)."""
    achieved_tflops: float | None = None
    """`flops_per_sample` x `samples_per_sec` / 1e12: all the row's devices together."""
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
    elements per sample x batch per device x bytes per element at the row's precision."""
    largest_batch_estimate: int | None = None
    """The largest batch per GPU that fits its memory, modelled, not measured: the peak allocated
    taken as linear in the batch (`records.largest_batch`); None on CPU devices, and where the
    row lacks its peak, its activation estimate or its GPUs' memory."""
    largest_batch_basis: str | None = None
    """What `largest_batch_estimate` stands on, in words: the peak and batch the line goes through,
    its slope (the activation estimate's, or fitted to peaks at two batches) and the memory."""


@dataclass(slots=True)
class ProfileFigures:
    """The `--profile` window: its op summary and seconds, and the step's breakdown with the bottleneck and the device's ceiling read from it."""

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
    device_ceiling_samples_per_sec: float | None = None
    """The global batch over the device's compute per step: the throughput if nothing but the
    device's own work set the pace (`breakdown.device_ceiling`)."""
    ceiling_taken: dict[str, float] | None = None
    """Samples/sec that host, input, communication and uneven steps take from the ceiling
    (summing to the ceiling minus `samples_per_sec`; `breakdown.Ceiling`)."""
    breakdown_clock: str | None = None
    """`device`: from GPU kernels and copies; `cpu`: from operators on host threads (CPU runs)."""


@dataclass(slots=True)
class UtilisationFigures:
    """The devices' utilisation and memory over the steady window (`mgbench.records.utilisation`)."""

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


@dataclass(slots=True)
class StepSeries:
    """Per timed step: its seconds, its input wait and its loss; and the first training losses."""

    step_seconds: list[float] = field(default_factory=list)
    input_wait_seconds: list[float] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)
    step_losses: list[float] = field(default_factory=list)
    """The first training losses (compile step included, `driver.STEP_LOSSES_KEPT`), for the
    same-start check between frameworks."""
