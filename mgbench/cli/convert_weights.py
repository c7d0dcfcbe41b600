"""`mgbench convert-weights SRC DST.npz --model M`: a saved torchvision model as the `.npz` that
`--init DST.npz` starts every framework from (e.g. ImageNet-pretrained DenseNet-121, as CheXNet)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from mgbench.cli.values import new_weights_file, seed
from mgbench.core.errors import UsageError
from mgbench.core.initial_weights import conformed, weights_file_bytes
from mgbench.core.models import model_spec
from mgbench.core.safe_files import write_file

TORCH_SUFFIXES = (".pth", ".pt")


def register(verbs: argparse._SubParsersAction) -> None:
    parser = verbs.add_parser(
        "convert-weights",
        help="turn a torchvision state dict (.pth) into the .npz that --init FILE.npz starts every framework from",
    )
    parser.add_argument("src", type=Path, help="a torch state dict of the torchvision architecture (.pth or .pt)")
    parser.add_argument("dst", type=new_weights_file, help="the .npz to write (not overwritten if it exists)")
    parser.add_argument("--model", default="densenet121", help="the catalogue model the weights are for")
    parser.add_argument(
        "--seed", type=seed, default=0, help="seed of the reference draw for arrays of another shape (the classifier)"
    )
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    spec = model_spec(args.model)
    if args.src.suffix not in TORCH_SUFFIXES:
        raise UsageError(f"{args.src}: convert-weights reads torch state dicts ({', '.join(TORCH_SUFFIXES)})")
    try:
        from mgbench.frameworks.pytorch.weights import read_state_dict
    except ImportError:
        raise UsageError("convert-weights reads torch files with PyTorch: make env-pytorch") from None
    result = conformed(read_state_dict(args.src), spec, args.seed, args.src.name)
    try:
        write_file(args.dst.absolute().parent, args.dst.name, weights_file_bytes(result.weights), exclusive=True)
    except FileExistsError:
        raise UsageError(f"{args.dst} was made while the weights were converted: it is not overwritten") from None
    except OSError as error:
        raise UsageError(f"cannot write {args.dst}: {error.strerror}") from None
    console = Console(stderr=True, soft_wrap=True)
    if result.redrawn:
        console.print(
            f"{', '.join(result.redrawn)}: another shape than {spec.name}'s ({spec.num_classes} outputs), "
            f"drawn from the reference initialisation (seed {args.seed})"
        )
    console.print(
        f"{args.dst}: {len(result.weights.arrays)} arrays, digest {result.weights.digest} (--init {args.dst})"
    )
    return 0
