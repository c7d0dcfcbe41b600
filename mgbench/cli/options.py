"""Options shared by `run` and `compare`: what defines the training job."""

from __future__ import annotations

import argparse
from pathlib import Path

from mgbench.core.errors import UsageError
from mgbench.core.initial_weights import INIT_FRAMEWORK, INIT_SAME, read_weights_file, shared_start_refusal
from mgbench.core.job import (
    DEFAULT_BATCH_PER_DEVICE,
    DEFAULT_COMPILE_MODE,
    DEFAULT_STEPS,
    GPU_BATCH_PER_DEVICE,
    GPU_STEPS,
    PRECISIONS,
    Job,
    job_size,
)
from mgbench.core.kinds import DataFormat, Decode, DeviceKind
from mgbench.core.models import MODELS, model_spec
from mgbench.frameworks.registry import check_compile_mode
from mgbench.machine.devices import AUTO, DEVICE_REQUESTS, resolve_device_kind
from mgbench.measure.timing import FIRST_STEP_KEPT

PROFILE_AUTO = "auto"
AUTO_PROFILE_STEPS = 2
"""`--profile auto` on GPUs. The breakdown takes from the window only the device's work per step
(its shares are of the timed step), which repeats from step to step far more closely than the
profiled steps' lengths do, and the window's cost grows with its steps: two steps, so that one
step's oddity would show as a second figure, not as the breakdown (benchmarks/RUNS.md, "2026-11-23,
1x H200: CUDA-only profiling against CPU and CUDA")."""


def add_job_options(parser: argparse.ArgumentParser) -> None:
    job = parser.add_argument_group("training job (identical in every framework)")
    job.add_argument("--model", default="densenet121", help=f"one of: {', '.join(MODELS)} (default densenet121)")
    job.add_argument(
        "--dataset",
        default="synthetic",
        help="synthetic (default), chestxray:PATH (NIH ChestX-ray14 layout), labels:PATH ({file: labels} "
        "CSV/JSON), imagefolder:PATH (class folders), tokens:PATH (a language model's token stream: mgbench "
        "prepare tokens)",
    )
    job.add_argument(
        "--batch-per-gpu",
        type=int,
        default=None,
        help=f"samples per device per step (default {GPU_BATCH_PER_DEVICE} on GPUs, {DEFAULT_BATCH_PER_DEVICE} on CPU devices)",
    )
    job.add_argument(
        "--steps",
        type=int,
        default=None,
        help=f"timed training steps per run (default {GPU_STEPS} on GPUs, {DEFAULT_STEPS} on CPU devices)",
    )
    job.add_argument(
        "--precision",
        default="fp32",
        choices=PRECISIONS,
        help="fp32 (default), or bf16/fp16 mixed precision through each framework's own autocast or policy; "
        "a framework that cannot train in it gets unsupported rows",
    )
    job.add_argument(
        "--data-format",
        default=None,
        choices=list(DataFormat),
        help="default: each framework's own for the model (channels_last where it can; gluon and chainer channels_first)",
    )
    job.add_argument(
        "--image-size", type=int, default=None, help="an image model's input side in px instead of its own"
    )
    job.add_argument(
        "--seq-len", type=int, default=None, help="a language model's tokens per sample instead of its context"
    )
    job.add_argument(
        "--data-on-device",
        action="store_true",
        help="keep synthetic data on the device (compute-only ceiling); default feeds from host",
    )
    job.add_argument(
        "--fused-optimizer",
        action="store_true",
        help="step the optimizer with the framework's own fused kernel where it has one (torch: its optimizer's fused=True)",
    )
    job.add_argument(
        "--decode",
        default=Decode.CPU,
        choices=list(Decode),
        help="where a real dataset's JPEGs are decoded: cpu (default: the loader's workers, Pillow) or gpu "
        "(the workers read file bytes; the training GPU decodes them, nvJPEG, and crops there)",
    )
    job.add_argument(
        "--decode-host-share",
        type=float,
        default=0.0,
        metavar="SHARE",
        help="with --decode gpu: the share of each batch (0 to below 1) the loader's workers decode on the host "
        "while the GPU decodes the rest (default 0: the GPU decodes all)",
    )
    job.add_argument(
        "--gpu-memory-gb",
        type=float,
        default=None,
        metavar="GIB",
        help="hold every framework to this many GiB of each GPU with its own memory setting, so a large GPU "
        "stands in for a smaller one (default: no cap)",
    )
    job.add_argument(
        "--skip-bad-images",
        action="store_true",
        help="leave out the dataset's images that cannot be decoded (each row lists them) instead of refusing it",
    )
    job.add_argument(
        "--epochs", type=int, default=None, help="train whole epochs of a real dataset, validating after each"
    )
    job.add_argument(
        "--target-metric",
        default=None,
        metavar="NAME=VALUE",
        help="with --epochs: stop after the first epoch whose validation reaches it, e.g. auc=0.80 "
        "(top1=0.7 on class folders; loss=4.5 or perplexity=90 for a language model); compares then rank by time to it",
    )
    job.add_argument(
        "--workers",
        type=int,
        default=None,
        help="data-loader workers per process (default: CPU count / processes, less one)",
    )
    job.add_argument(
        "--lr",
        type=float,
        default=None,
        help="peak learning rate of the model's declared optimizer (default: the model's own, mgbench list), "
        "scheduled as the model declares",
    )
    job.add_argument(
        "--lr-reference-batch",
        type=int,
        default=256,
        help="with --epochs: --lr is the rate at this global batch, scaled linearly with warm-up (default 256)",
    )
    job.add_argument(
        "--seed",
        type=int,
        default=0,
        help="one seed for every framework: the starting weights (--init same), the synthetic data, the order "
        "of a real dataset and its crops and flips (0 to 2**32 - 1, default 0)",
    )
    job.add_argument(
        "--init",
        default=None,
        metavar="same|framework|FILE.npz",
        help="where every framework's weights start: same (default where the model has a shared draw: "
        "one set of weights, drawn from the seed as torchvision initialises), framework (each "
        "framework's own initialiser), or FILE.npz (e.g. `mgbench convert-weights` of a torchvision state dict)",
    )
    job.add_argument(
        "--profile",
        type=profile_option,
        default=PROFILE_AUTO,
        metavar="STEPS",
        help="after the timed steps, trace STEPS more under the framework's profiler for the step-time "
        f"breakdown (profiles/<run_id>/); 0: off; default auto: {AUTO_PROFILE_STEPS} on GPUs, 0 on CPU",
    )
    job.add_argument(
        "--compile",
        nargs="?",
        type=compile_option,
        const=DEFAULT_COMPILE_MODE,
        default=None,
        metavar="MODE",
        help="compile the training step (torch.compile, XLA); MODE is the compiler's, e.g. torch's "
        f"reduce-overhead (default {DEFAULT_COMPILE_MODE}); frameworks without a compiler get unsupported rows",
    )
    job.add_argument(
        "--device",
        default=AUTO,
        choices=DEVICE_REQUESTS,
        help="auto: GPUs when visible, else CPU devices stand in for GPUs",
    )


def profile_option(text: str) -> str | int:
    """argparse type for `--profile`: `auto` or a number of steps (0: no profiling)."""
    if text == PROFILE_AUTO:
        return text
    try:
        steps = int(text)
    except ValueError:
        steps = -1
    if steps < 0:
        raise argparse.ArgumentTypeError(f"--profile takes a number of steps >= 0 or auto, got {text!r}")
    return steps


def compile_option(text: str) -> str:
    """argparse type for `--compile MODE`: a mode some framework compiles in (see `check_compile_mode`)."""
    try:
        return check_compile_mode(text)
    except UsageError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def profile_steps(option: str | int, device_kind: DeviceKind, epochs: int | None) -> int:
    """`auto`: a window on GPUs, so every GPU row gets its breakdown; none on CPU devices, where
    it would lengthen every small run, nor with `--epochs`, whose runs have no window."""
    if option != PROFILE_AUTO:
        return int(option)
    return AUTO_PROFILE_STEPS if device_kind.on_gpu and epochs is None else 0


def job_from_args(args: argparse.Namespace) -> tuple[Job, str | None]:
    """The job the options describe, sized once for the devices it runs on (`job_size`), and
    the note on its size to print before running: that it was shrunk, or that one timed step
    gives no steady-state figure (`--steps 1` runs: weight-equality checks and smoke runs need
    one step; its rows carry the warning `timing.FIRST_STEP_KEPT`). Its data format is None unless given: each
    framework then trains in its own default for the model (see `plan_runs`)."""
    kind = resolve_device_kind(args.device)
    native = model_spec(args.model).input
    given = {field: getattr(args, field) for field in ("image_size", "seq_len")}
    size = job_size(args.model, kind, args.batch_per_gpu, args.steps, given[native.size_field], args.epochs)
    job = Job(
        model=args.model,
        device_kind=kind,
        batch_per_device=size.batch_per_device,
        steps=size.steps,
        precision=args.precision,
        data_format=args.data_format,
        dataset=args.dataset,
        data_on_device=args.data_on_device,
        fused_optimizer=args.fused_optimizer,
        **(given | {native.size_field: size.input_size}),
        learning_rate=model_spec(args.model).optimization.learning_rate if args.lr is None else args.lr,
        seed=args.seed,
        epochs=args.epochs,
        workers=args.workers,
        lr_reference_batch=args.lr_reference_batch,
        profile_steps=profile_steps(args.profile, kind, args.epochs),
        compile=args.compile,
        skip_bad_images=args.skip_bad_images,
        init=resolve_init(args.init, args.model),
        target_metric=args.target_metric,
        decode=args.decode,
        decode_host_share=args.decode_host_share,
        batch_default=size.batch_default,
        gpu_memory_gb=args.gpu_memory_gb,
    )
    one_step = f"--steps 1: {FIRST_STEP_KEPT}" if size.steps == 1 and args.epochs is None else None
    return job, size.shrunk or one_step


def resolve_init(init: str | None, model: str) -> str:
    """`--init` as a job holds it: unset is `same` where the model has a shared draw, else
    `framework`; a weights file is checked readable once here and kept by its absolute path
    (runs start in other folders)."""
    if init is None:
        return INIT_FRAMEWORK if shared_start_refusal(model) else INIT_SAME
    if init in (INIT_SAME, INIT_FRAMEWORK):
        return init
    path = Path(init).expanduser().absolute()
    try:
        read_weights_file(path)
    except UsageError as error:
        raise UsageError(f"--init {error}") from None
    return str(path)


def parse_device_counts(text: str) -> list[int]:
    """`4` means 1 and 4 devices; `1,2,4` means exactly those, each once (a script's `1,$N` on a
    one-GPU machine asks for one run, not two of the same row)."""
    counts = device_counts(text)
    if len(counts) == 1 and counts[0] > 1:
        counts = [1, counts[0]]
    return counts


def device_counts(text: str) -> list[int]:
    """The counts of a `--gpus` list (`compare`'s, `project`'s), each once, in the order given.
    An empty item (`1,,2`, `2,`) is refused: it is a count left out, perhaps an unset variable in
    a script's `1,$N`."""
    parts = [part.strip() for part in text.split(",")]
    if not any(parts):
        raise UsageError("--gpus is empty")
    if not all(parts):
        raise UsageError(f"--gpus {text!r} has an empty item; give counts such as 1,2,4")
    try:
        counts = [int(part) for part in parts]
    except ValueError:
        raise UsageError(f"--gpus takes a number or a comma-separated list, got {text!r}") from None
    return list(dict.fromkeys(counts))
