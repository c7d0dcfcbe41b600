"""Options shared by `run` and `compare`: what defines the training job."""

from __future__ import annotations

import argparse

from mgbench.common.config import DATA_FORMATS, PRECISIONS, RunConfig
from mgbench.common.devices import resolve_device_kind
from mgbench.common.errors import UsageError
from mgbench.common.models import MODELS


def add_job_options(parser: argparse.ArgumentParser) -> None:
    job = parser.add_argument_group("training job (identical in every framework)")
    job.add_argument("--model", default="densenet121", help=f"one of: {', '.join(MODELS)} (default densenet121)")
    job.add_argument(
        "--dataset",
        default="synthetic",
        help="synthetic (default), chestxray:PATH (NIH ChestX-ray14 layout), labels:PATH ({file: labels} "
        "CSV/JSON), imagefolder:PATH (class folders)",
    )
    job.add_argument("--batch-per-gpu", type=int, default=32, help="samples per device per step (default 32)")
    job.add_argument("--steps", type=int, default=50, help="timed training steps per run (default 50)")
    job.add_argument("--precision", default="fp32", choices=PRECISIONS)
    job.add_argument("--data-format", default="channels_first", choices=DATA_FORMATS)
    job.add_argument("--image-size", type=int, default=None, help="override the model's input size (small CPU demos)")
    job.add_argument(
        "--data-on-device",
        action="store_true",
        help="keep synthetic data on the device (compute-only ceiling); default feeds from host",
    )
    job.add_argument(
        "--epochs", type=int, default=None, help="train whole epochs of a real dataset, validating after each"
    )
    job.add_argument(
        "--workers", type=int, default=None, help="data-loader workers per process (default: CPU count / processes)"
    )
    job.add_argument("--lr", type=float, default=0.01, help="SGD learning rate (momentum 0.9)")
    job.add_argument(
        "--lr-reference-batch",
        type=int,
        default=256,
        help="with --epochs: --lr is the rate at this global batch, scaled linearly with warm-up (default 256)",
    )
    job.add_argument("--seed", type=int, default=0)
    job.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="STEPS",
        help="after the timed steps, trace STEPS more under the framework's profiler (profiles/<run_id>/)",
    )
    job.add_argument(
        "--device",
        default="auto",
        choices=("auto", "cuda", "cpu"),
        help="auto: GPUs when visible, else CPU devices stand in for GPUs",
    )


def base_config(args: argparse.Namespace, framework: str, strategy: str, devices: int) -> RunConfig:
    return RunConfig(
        framework=framework,
        strategy=strategy,
        model=args.model,
        devices=devices,
        device_kind=resolve_device_kind(args.device),
        batch_per_device=args.batch_per_gpu,
        steps=args.steps,
        precision=args.precision,
        data_format=args.data_format,
        dataset=args.dataset,
        data_on_device=args.data_on_device,
        image_size=args.image_size,
        learning_rate=args.lr,
        seed=args.seed,
        epochs=args.epochs,
        workers=args.workers,
        lr_reference_batch=args.lr_reference_batch,
        profile_steps=args.profile,
    )


def parse_device_counts(text: str) -> list[int]:
    """`4` means 1 and 4 devices; `1,2,4` means exactly those."""
    try:
        counts = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise UsageError(f"--gpus takes a number or a comma-separated list, got {text!r}") from None
    if not counts:
        raise UsageError("--gpus is empty")
    if len(counts) == 1 and counts[0] > 1:
        counts = [1, counts[0]]
    return counts
