"""Reference point for the PyTorch adapter on GPT-2: the plainest nanoGPT-style training loop
around the same model build.

The adapter's tokens/s and model-FLOPs utilisation mean little alone: this loop is the yardstick
its overhead is measured against (the driver, the timers, the data hand-over). It shares with
mgbench only what must be the same for the two to train the same job: the model
(`build_gpt2(GPT2_SHAPES[model], seed)`), its loss (`language_model_loss`), the synthetic tokens
(`synthetic_tokens`) and the optimizer the catalogue declares for the model, as mgbench builds it
(`ModelSpec.optimization`, `build_optimizer`: torch's AdamW, fused on CUDA, betas (0.9, 0.95),
weight decay 0.1 on every parameter, GPT-2's as nanoGPT trains it). The rate is held at the
declared peak (6e-4) where mgbench follows the schedule: a step's rate changes none of its work.
Nothing of mgbench's driver runs here, and the script is not part of mgbench's package.

The loop: one batch of tokens made once on the device and trained on every step; bf16 autocast
around the forward and the loss (`--precision fp32`: none); with `--compile`, torch.compile in
its default mode of the forward and the loss together, as nanoGPT compiles its model, whose
forward returns the loss. TF32 is left at torch's default (off for matrix products), as the
adapter leaves it. The warm-up steps (the compile among them) are untimed; the timed steps run
without a host synchronisation between the one before the first and the one after the last, and
the window's length on the host's clock gives tokens/s. The model-FLOPs utilisation is the
achieved TFLOP/s (`GPT2.flops_per_token`) over the device's dense vendor peak at the precision
(`records.peak.vendor_peak`), null where the device has none (the CPU).

    .venv/bin/python benchmarks/plain_gpt2.py --model gpt2 --batch 16 --seq-len 1024 --compile --out plain.jsonl

prints one JSON line and, with `--out FILE`, appends it to FILE.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path
from typing import Any

import torch
from torch import nn

from mgbench.core.gpt2 import GPT2_SHAPES
from mgbench.core.models import model_spec
from mgbench.datasets.synthetic import Shard
from mgbench.datasets.tokens import synthetic_tokens
from mgbench.frameworks.pytorch.gpt2 import build_gpt2, language_model_loss
from mgbench.frameworks.pytorch.models import build_optimizer
from mgbench.records.peak import TERA, vendor_peak

AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "fp32": None}


class LanguageModelLoss(nn.Module):
    """The model and its loss in one forward, so that `--compile` compiles both, as nanoGPT's
    model returns its loss."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return language_model_loss(self.model(inputs), targets)


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gpt2", choices=sorted(GPT2_SHAPES))
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seq-len", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=50, help="timed steps")
    parser.add_argument("--warmup", type=int, default=10, help="untimed steps before them")
    parser.add_argument("--compile", action="store_true", help="torch.compile the forward and the loss")
    parser.add_argument("--precision", default="bf16", choices=sorted(AUTOCAST_DTYPES))
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="append the JSON line to this file too")
    args = parser.parse_args(argv)
    if refusal := GPT2_SHAPES[args.model].length_refusal(args.seq_len):
        parser.error(refusal)
    if args.batch < 1 or args.steps < 1 or args.warmup < 1:
        parser.error("--batch, --steps and --warmup must be at least 1")
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: torch sees no CUDA device")
    return args


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def device_name(device: torch.device) -> str:
    return torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or platform.machine()


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Train `args.warmup` then `args.steps` steps; the record of the timed ones."""
    device = torch.device(args.device)
    shape = GPT2_SHAPES[args.model]
    model = build_gpt2(shape, args.seed, device)
    declared = model_spec(args.model).optimization
    optimizer = build_optimizer(
        model.parameters(), declared.learning_rate, declared.optimizer, fused=device.type == "cuda"
    )
    trained = LanguageModelLoss(model)
    step_loss = torch.compile(trained) if args.compile else trained
    inputs, targets = (
        torch.from_numpy(array).to(device)
        for array in synthetic_tokens(shape.vocabulary, args.seq_len, 0, Shard(0, args.batch), args.seed)
    )
    dtype = AUTOCAST_DTYPES[args.precision]

    def step() -> torch.Tensor:
        optimizer.zero_grad()
        with torch.autocast(device.type, dtype=dtype, enabled=dtype is not None):
            loss = step_loss(inputs, targets)
        loss.backward()
        optimizer.step()
        return loss.detach()

    first_loss = step().item()
    for _ in range(args.warmup - 1):
        step()
    synchronize(device)
    start = time.perf_counter()
    for _ in range(args.steps):
        loss = step()
    synchronize(device)
    seconds = time.perf_counter() - start

    tokens_per_sec = args.steps * args.batch * args.seq_len / seconds
    flops_per_token = shape.flops_per_token(args.seq_len)
    achieved = flops_per_token * tokens_per_sec / TERA
    name = device_name(device)
    peak = vendor_peak(name, args.precision)
    cuda = device.type == "cuda"
    return {
        "model": args.model,
        "batch": args.batch,
        "seq_len": args.seq_len,
        "precision": args.precision,
        "compiled": args.compile,
        "steps": args.steps,
        "warmup": args.warmup,
        "optimizer": declared.record()["optimizer"],
        "learning_rate": declared.learning_rate,
        "seconds": seconds,
        "tokens_per_sec": tokens_per_sec,
        "flops_per_token": flops_per_token,
        "achieved_tflops": achieved,
        "peak_tflops": peak[0] if peak else None,
        "mfu": achieved / peak[0] if peak else None,
        "first_loss": first_loss,
        "last_loss": loss.item(),
        "peak_memory_allocated_bytes": torch.cuda.max_memory_allocated(device) if cuda else None,
        "peak_memory_reserved_bytes": torch.cuda.max_memory_reserved(device) if cuda else None,
        "device": name,
        "torch": torch.__version__,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse(argv)
    record = run(args)
    line = json.dumps(record)
    print(line, flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with args.out.open("a") as out:
            out.write(line + "\n")
    return record


if __name__ == "__main__":
    main()
