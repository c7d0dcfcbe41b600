"""`Job`: the training job the user asked for, before it is planned into runs.

One compare trains one job in every framework, strategy and device count; each of those is a
`RunConfig` (core/config.py): the job as that run trains it, with its framework, strategy and
device count. Keeping the job apart means the options are read, sized (`job_size`) and checked
once (`cli/options.job_from_args`), the dataset is checked once for the job, and no run has to
be made up to stand for it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from mgbench.core.errors import UsageError
from mgbench.core.initial_weights import (
    INIT_FRAMEWORK,
    INIT_SAME,
    InitialWeights,
    initial_weights,
    shared_start_refusal,
)
from mgbench.core.inputs import SampleInput
from mgbench.core.kinds import DataFormat, Decode, DeviceKind
from mgbench.core.models import ModelSpec, model_spec
from mgbench.core.schema import check_fields
from mgbench.core.target import TargetMetric

Precision = Literal["fp32", "bf16", "fp16"]
PRECISIONS: tuple[str, ...] = ("fp32", "bf16", "fp16")
DEFAULT_COMPILE_MODE = "default"
"""What a bare `--compile` asks for: each compiler's own default."""

SEED_LIMIT = 2**32
"""Seeds are below this: numpy's `default_rng`/`seed` and TensorFlow take 32-bit seeds, so a
larger or negative one would fail every run after launching instead of once before."""


DEFAULT_BATCH_PER_DEVICE = 32
DEFAULT_STEPS = 200
"""The job on CPU devices given part of its size: 32 per device and 200 timed steps."""
GPU_BATCH_PER_DEVICE = 256
GPU_STEPS = 100
"""The default job on GPUs (docs/measurement.md, "The default job"): enough images per step that
the GPU, not the host thread launching an eager framework's kernels, bounds the step. A host's
cores shared with other machines run at half speed in spells of seconds, and a host-bound step
follows them; a step whose device work outlasts its launching at half speed does not. 100 steps
keep the warm-up in the window's first half and a round within a minute for the fast frameworks.
A framework may declare a smaller default for a model that needs more memory at 256 than an 80 GB
GPU holds (`DeviceMemory.gpu_batches`); a GPU too small for the batch runs it halved until it fits
(`oom_retries`)."""
CPU_BATCH_PER_DEVICE = 8
CPU_STEPS = 20

MIN_IMAGE_SIZE = 16
MAX_IMAGE_SIZE = 4096
"""The largest image side, in px, that mgbench trains on (`--image-size`) or writes (`prepare`'s
and `make-sample-chestxray`'s `--size`): four times the NIH originals' 1024 px and over ten times
the largest native input of the catalogue (299 px). A larger side is no benchmark, only minutes of
allocation or a MemoryError (a transformer's position embedding grows with its square)."""


def image_size_refusal(size: int, minimum: int = MIN_IMAGE_SIZE) -> str | None:
    """Why an image side of `size` px is refused (None: it is from `minimum` to `MAX_IMAGE_SIZE`)."""
    if minimum <= size <= MAX_IMAGE_SIZE:
        return None
    return f"image size must be {minimum} to {MAX_IMAGE_SIZE} px, got {size}"


def gpu_memory_refusal(gigabytes: float, kind: DeviceKind) -> str | None:
    """Why `--gpu-memory-gb` cannot cap the job's devices (None: it can)."""
    if not math.isfinite(gigabytes) or gigabytes <= 0:
        return f"--gpu-memory-gb takes a number of GiB above 0, got {gigabytes}"
    if not kind.on_gpu:
        return "--gpu-memory-gb caps GPU memory, and this job runs on CPU devices"
    return None


def seed_refusal(seed: int) -> str | None:
    """Why `seed` cannot seed every framework alike (None: it can)."""
    return None if 0 <= seed < SEED_LIMIT else f"the seed must be 0 to 2**32 - 1 (32 bits), got {seed}"


@dataclass(frozen=True)
class Job:
    model: str
    device_kind: DeviceKind
    batch_per_device: int
    """Samples per device per step on the smallest device count (strong scaling splits its
    global batch over the larger ones)."""
    steps: int
    precision: Precision = "fp32"
    data_format: DataFormat | None = None
    """The format asked for; None: each framework's own for the model, resolved per run, or no
    format at all where the model's input has no layout (tokens)."""
    dataset: str = "synthetic"
    data_on_device: bool = False
    fused_optimizer: bool = False
    """Step the optimizer with the framework's own fused kernel, where it offers one
    (`Capabilities.fused_optimizers`; torch's `fused=True` on its SGD or AdamW): the same arithmetic in fewer launches."""
    image_size: int | None = None
    """An image model's input side in px instead of its own (small CPU demos)."""
    learning_rate: float = 0.01
    seed: int = 0
    epochs: int | None = None
    """Train whole epochs of a real dataset (validating after each) instead of `steps` steps."""
    workers: int | None = None
    """Data-loader worker processes per training process; None sizes them from the CPU count."""
    lr_reference_batch: int = 256
    """With `epochs`, `learning_rate` is the rate for this global batch (linear scaling rule)."""
    profile_steps: int = 0
    """Extra steady-state steps traced by the framework's profiler after the timed ones (0: none)."""
    compile: str | None = None
    """Compile the training step in this mode (`default`, or a compiler's own such as torch's
    `reduce-overhead`); None runs it as the framework does without a compiler asked for."""
    skip_bad_images: bool = False
    """Leave out the dataset's images that cannot be decoded instead of refusing the dataset."""
    skipped_images: tuple[str, ...] = ()
    """The images left out (`skip_bad_images`): the files the dataset check before launching
    could not decode. Every reader of the dataset leaves them out."""
    bit_depth: int | None = None
    """The range of the dataset's images wider than 8 bits (16-bit PNGs, where 12-bit detectors
    store 0-4095), read once by the dataset check: each such image is scaled by 2**bit_depth - 1,
    so a raw value means the same in every image. None: no such images, or no check (they are
    then scaled by the 16 bits a PNG declares)."""
    init: str = INIT_FRAMEWORK
    """Where every framework's weights start (`core/initial_weights.py`): `same` (one reference
    draw for all), `framework` (each framework's own initialiser), or the path of an `.npz` of
    weights. The command line defaults to `same`; a job or run read back without it (written
    before it existed) started from each framework's own."""
    target_metric: str | None = None
    """With `epochs`: stop after the first epoch whose validation reaches this level, as `auc=0.8`
    (`core/target.py`), so a compare answers how long each framework takes to a model this good."""
    decode: Decode = Decode.CPU
    """Where the dataset's JPEGs are decoded: `cpu`, by the loader's workers (Pillow); `gpu`, on
    the training device from the file bytes the workers read, the crop and flip drawn on the host
    from each image's header (frameworks that declare a device decoder, `Capabilities.gpu_decoder`)."""
    decode_host_share: float = 0.0
    """With `decode` `gpu`: the share of each batch the loader's workers decode and crop on the
    host (Pillow) while the device decodes the rest, so cores the device decode leaves idle take
    part of its work off the GPU the step runs on (frameworks whose loader splits a batch,
    `Capabilities.splits_decode`). 0: the device decodes every image."""
    batch_default: bool = False
    """The batch per device is the default, no `--batch-per-gpu` given: on GPUs a framework that
    declares its own default for the model (`DeviceMemory.gpu_batches`, one that fits an 80 GB GPU)
    is planned at that, and its rows say so. False in jobs and rows written before it existed."""
    gpu_memory_gb: float | None = None
    """`--gpu-memory-gb`: each framework holds itself to this many GiB of each GPU with its own
    memory setting (`DeviceMemory.cap`), so an 80 GB GPU stands in for a smaller one. None: no cap."""
    seq_len: int | None = None
    """A language model's tokens per sample instead of its context."""

    def __post_init__(self) -> None:
        check_fields(self.__dict__, Job, "not a training job")
        settle(self)

    def with_changes(self, **changes: Any) -> Job:
        return dataclasses.replace(self, **changes)

    @property
    def spec(self) -> ModelSpec:
        return model_spec(self.model)

    @property
    def input(self) -> SampleInput:
        """One sample as this job trains it: the model's input (`ModelSpec.input`) at the size
        the job gives (`image_size`, `seq_len`), else its own."""
        native = self.spec.input
        extent = getattr(self, native.size_field)
        return native if extent is None else native.sized(extent)

    @property
    def input_size(self) -> int:
        """The size the work and the weights depend on: an image's side in px, a sequence's tokens."""
        return self.input.extent

    def start_from(self, spec: ModelSpec, load: Callable[[InitialWeights], None]) -> str | None:
        """The weights this job starts from (`--init`) for `spec` (the model as the job's dataset
        shapes it) handed to `load`, the framework's own loader, and their digest; None: nothing
        is loaded, the framework's initialiser stands (`--init framework`)."""
        start = initial_weights(self.init, spec, self.seed, self.input_size)
        if start is None:
            return None
        load(start)
        return start.digest


@dataclass(frozen=True)
class JobSize:
    """A job's batch per device, steps and image size (None: the model's own), and what to say
    before running where they were shrunk."""

    batch_per_device: int
    steps: int
    input_size: int | None
    """The model's input size given, or shrunk (px or tokens: its input's `size_field`); None: its own."""
    shrunk: str | None = None
    batch_default: bool = False
    """No batch was given: the batch per device is the default for the device kind."""


def job_size(
    model: str,
    device_kind: DeviceKind,
    batch_per_device: int | None = None,
    steps: int | None = None,
    input_size: int | None = None,
    epochs: int | None = None,
) -> JobSize:
    """The job's size, each value given or its default, so that every caller that builds a `Job`
    gets the same job. `input_size` sizes the model's input (`--image-size` or `--seq-len`). On
    CPU devices, a job given no size at all (batch, steps, input size, epochs) is one that ends
    in minutes on a laptop's cores instead of the GPU job's hours."""
    spec = model_spec(model)
    gpu_batch = spec.gpu_batch_per_device or GPU_BATCH_PER_DEVICE
    if not device_kind.on_gpu and all(value is None for value in (batch_per_device, steps, input_size, epochs)):
        native = spec.input
        shrunk = native.for_cpu()
        note = (
            f"CPU devices and no job size given: the job is shrunk to {native.size_option} {shrunk} --batch-per-gpu "
            f"{CPU_BATCH_PER_DEVICE} --steps {CPU_STEPS} so it ends in minutes; give any of these options "
            f"for the full job ({native.describe()}, {DEFAULT_BATCH_PER_DEVICE} per device, "
            f"{DEFAULT_STEPS} steps; on GPUs {gpu_batch} and {GPU_STEPS})"
        )
        return JobSize(CPU_BATCH_PER_DEVICE, CPU_STEPS, shrunk, note)
    default_batch, default_steps = (
        (gpu_batch, GPU_STEPS) if device_kind.on_gpu else (DEFAULT_BATCH_PER_DEVICE, DEFAULT_STEPS)
    )
    return JobSize(
        default_batch if batch_per_device is None else batch_per_device,
        default_steps if steps is None else steps,
        input_size,
        batch_default=batch_per_device is None,
    )


def input_refusal(job: Job) -> str | None:
    """Why the job's input options do not fit its model's input (None: they do): a size given for
    another kind of input (`--image-size` to a language model, `--seq-len` to an image model), a
    data format for an input without a layout, or a size the model cannot take."""
    spec = model_spec(job.model)
    native = spec.input
    for field in ("image_size", "seq_len"):
        if field != native.size_field and getattr(job, field) is not None:
            option = "--" + field.replace("_", "-")
            return f"{option} does not size {job.model}, which trains on {native.describe()}; use {native.size_option}"
    if job.data_format is not None and not native.has_layout:
        return f"--data-format: {job.model} trains on {native.describe()}, which have no channels to lay out"
    if job.seq_len is not None and spec.language_model is not None:
        return spec.language_model.length_refusal(job.seq_len)
    if job.image_size is None:
        return None
    if refusal := image_size_refusal(job.image_size):
        return refusal
    if spec.transformer and (refusal := spec.transformer.size_refusal(job.image_size)):
        return f"{job.model} {refusal}"
    return None


def settle(job: Job) -> None:
    """The job's values, of their declared types (`check_fields`), settled and checked.

    JSON gives strings and lists back: the device kind and data format become their typed
    values and the skipped images a tuple, so a job or run compares equal however it travelled.
    Then each value must be within its range, and options that cannot go together are refused.
    """
    object.__setattr__(job, "device_kind", DeviceKind(job.device_kind))
    if job.data_format is not None:
        object.__setattr__(job, "data_format", DataFormat(job.data_format))
    object.__setattr__(job, "skipped_images", tuple(job.skipped_images))
    object.__setattr__(job, "decode", Decode(job.decode))
    model_spec(job.model)
    if job.batch_per_device < 1:
        raise UsageError(f"batch per device must be at least 1, got {job.batch_per_device}")
    if job.steps < 1:
        raise UsageError(f"steps must be at least 1, got {job.steps}")
    if job.precision not in PRECISIONS:
        raise UsageError(f"unknown precision {job.precision!r}; choose from {', '.join(PRECISIONS)}")
    if job.epochs is not None and job.epochs < 1:
        raise UsageError(f"epochs must be at least 1, got {job.epochs}")
    if job.epochs is not None and job.dataset == "synthetic":
        raise UsageError(
            "--epochs needs a real dataset (--dataset chestxray:PATH, labels:PATH, imagefolder:PATH or tokens:PATH)"
        )
    if job.data_on_device and job.dataset != "synthetic":
        raise UsageError(
            "--data-on-device keeps synthetic batches on the devices; a real dataset is decoded "
            "and augmented by the loader every step (compare a staged and an -unstaged strategy instead)"
        )
    if not 0 <= job.decode_host_share < 1:
        raise UsageError(f"--decode-host-share must be at least 0 and below 1, got {job.decode_host_share}")
    if job.decode_host_share and not job.decode.on_device:
        raise UsageError(
            "--decode-host-share splits the decode of --decode gpu; with --decode cpu the host decodes all"
        )
    if job.decode.on_device and not job.device_kind.on_gpu:
        raise UsageError("--decode gpu decodes on the GPUs, and this job runs on CPU devices; use --decode cpu")
    if job.decode.on_device and job.dataset == "synthetic":
        raise UsageError("--decode gpu decodes a real dataset's JPEGs; synthetic data has nothing to decode")
    if job.target_metric is not None:
        if job.epochs is None:
            raise UsageError("--target-metric needs --epochs N (the most epochs to train towards it)")
        TargetMetric.parse(job.target_metric)
    if job.workers is not None and job.workers < 0:
        raise UsageError(f"workers must be 0 or more, got {job.workers}")
    if refusal := seed_refusal(job.seed):
        raise UsageError(refusal)
    if not math.isfinite(job.learning_rate) or job.learning_rate < 0:
        raise UsageError(f"the learning rate must be a finite number >= 0, got {job.learning_rate}")
    if job.lr_reference_batch < 1:
        raise UsageError(f"the learning-rate reference batch must be at least 1, got {job.lr_reference_batch}")
    if job.profile_steps < 0:
        raise UsageError(f"--profile takes a number of steps >= 0 (0: none), got {job.profile_steps}")
    if job.compile is not None and not job.compile.strip():
        raise UsageError("--compile takes a mode name, got an empty one")
    if refusal := input_refusal(job):
        raise UsageError(refusal)
    if job.init == INIT_SAME and (refusal := shared_start_refusal(job.model)):
        raise UsageError(f"--init same: {refusal}; use --init framework")
    if job.init not in (INIT_SAME, INIT_FRAMEWORK) and not job.init.endswith(".npz"):
        raise UsageError(f"--init takes same, framework or a weights file FILE.npz, got {job.init!r}")
    if job.gpu_memory_gb is not None and (refusal := gpu_memory_refusal(job.gpu_memory_gb, job.device_kind)):
        raise UsageError(refusal)
    if job.bit_depth is not None and not 1 <= job.bit_depth <= 32:
        raise UsageError(f"a bit depth is 1 to 32 bits, got {job.bit_depth}")
