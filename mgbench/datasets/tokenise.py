"""Tokenise a corpus once, on the CPU, into the uint16 streams language-model runs read (`tokens.py`).

Each document is encoded in order and followed by the tokenizer's `<|endoftext|>`; the first
90% of the tokens are `train.bin`, the rest `val.bin` (a split by position, as nanoGPT's
Shakespeare: the validation text is text the training never saw). Everything that can be
refused is refused before DST is touched: a corpus that is missing or empty, a tokenizer whose
files are not at hand, a vocabulary that does not fit uint16, a DST that is used (unless
`overwrite`, which replaces only what a prepare wrote there: `output.claim_folder`). The
description, `tokens.json`, is written last: a DST without it is incomplete.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mgbench.core.errors import UsageError
from mgbench.core.safe_files import write_file
from mgbench.datasets.bpe import Tokenizer
from mgbench.datasets.corpus import Corpus, named_corpus
from mgbench.datasets.output import check_claimable, claim_folder, writing_into
from mgbench.datasets.parallel import ProgressCallback
from mgbench.datasets.prepare import check_apart
from mgbench.datasets.tokens import DESCRIPTION_FILE, STREAM_FILES, TOKEN_DTYPE, StreamDescription

VAL_PERCENT = 10
TOKEN_LIMIT = np.iinfo(TOKEN_DTYPE).max + 1


def check_fits(tokenizer: Tokenizer) -> None:
    """Refuse a vocabulary whose tokens a uint16 stream cannot hold, before anything is encoded."""
    if tokenizer.vocab_size > TOKEN_LIMIT:
        raise UsageError(
            f"tokenizer {tokenizer.name}: {tokenizer.vocab_size} tokens, more than the {TOKEN_LIMIT} a uint16 "
            "stream holds"
        )


def encoded(corpus: Corpus, tokenizer: Tokenizer, on_progress: ProgressCallback) -> np.ndarray:
    """Every document's tokens, each followed by `<|endoftext|>`, as one uint16 array (every
    token below the vocabulary's size, which `check_fits` held to uint16)."""
    parts = []
    for done, document in enumerate(corpus.documents, start=1):
        parts.append(np.array([*tokenizer.encode(document.text), tokenizer.end_of_text], dtype=np.int64))
        on_progress(done, len(corpus.documents))
    return np.concatenate(parts).astype(TOKEN_DTYPE)


def split_point(count: int) -> int:
    """Tokens in the training stream: all but the last VAL_PERCENT, each stream at least one (a
    corpus with any text is two tokens or more: its text's and `<|endoftext|>`)."""
    return min(count - 1, max(1, count - count * VAL_PERCENT // 100))


def prepare_tokens(
    corpus_name: str,
    tokenizer_name: str,
    dst: Path,
    cache: Path,
    overwrite: bool = False,
    on_progress: ProgressCallback = lambda done, total: None,
) -> StreamDescription:
    """Write `train.bin`, `val.bin` and `tokens.json` to `dst` from `--corpus` and `--tokenizer`
    (their files fetched into `cache` where absent); `on_progress(done, total)` after each document."""
    check_claimable(dst, overwrite)
    corpus = named_corpus(corpus_name, cache)
    if corpus.root is not None:
        check_apart(corpus.root, dst)
    tokenizer = Tokenizer.named(tokenizer_name, cache)
    check_fits(tokenizer)
    if not corpus.documents or not corpus.characters:
        raise UsageError(f"corpus {corpus.name}: no text in it")
    claim_folder(dst, [*STREAM_FILES.values(), DESCRIPTION_FILE], overwrite)
    return write_streams(corpus, tokenizer, dst, on_progress)


def write_streams(corpus: Corpus, tokenizer: Tokenizer, dst: Path, on_progress: ProgressCallback) -> StreamDescription:
    """Tokenise and write into `dst`, claimed (`output.claim_folder`)."""
    tokens = encoded(corpus, tokenizer, on_progress)
    cut = split_point(len(tokens))
    streams = dict(zip(STREAM_FILES, (tokens[:cut], tokens[cut:])))
    description = StreamDescription(
        tokenizer=tokenizer.description(),
        corpus={
            "name": corpus.name,
            "documents": len(corpus.documents),
            "characters": corpus.characters,
            "sources_sha256": corpus.sources,
        },
        tokens={split: len(stream) for split, stream in streams.items()},
    )
    with writing_into(dst):
        for split, stream in streams.items():
            write_file(dst, STREAM_FILES[split], stream.tobytes())
        write_file(dst, DESCRIPTION_FILE, description.to_json())
    return description
