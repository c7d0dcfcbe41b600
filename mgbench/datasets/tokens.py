"""Token batches for language models: synthetic ones for throughput, and windows of a token stream.

A batch is `(inputs, targets)`, each `(samples, seq_len)` int32, targets the inputs shifted by
one token: both are one row of `seq_len + 1` tokens. As with images (`synthetic.py`), each row is
drawn from its own seeded generator (seed, batch index, sample index), so a process holding
samples 64..127 of a global batch (`Shard`) holds exactly what one process holding the whole
batch holds there, whichever framework reads it.

A stream (what `mgbench prepare tokens` writes, `tokenise.py`) is a folder: `train.bin` and
`val.bin`, the tokens as little-endian uint16 one after the other, and `tokens.json`, which
describes them (tokenizer, vocabulary, token counts, source hashes) and is written last: a
folder without it is incomplete. `TokenStream` maps a split's file into memory and reads random
windows of it; an epoch is the stream's length over the tokens of a global batch.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mgbench.core.errors import UsageError
from mgbench.core.safe_files import read_regular
from mgbench.datasets.synthetic import Shard

TOKEN_DTYPE = np.dtype("<u2")
"""How a stream holds its tokens on disk: a vocabulary of at most 65,536 (GPT-2's is 50,257)."""
BATCH_DTYPE = np.int32
DESCRIPTION_FILE = "tokens.json"
STREAM_FORMAT = "mgbench-token-stream-1"
STREAM_FILES = {"train": "train.bin", "val": "val.bin"}


def shifted(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Inputs and targets from rows of `seq_len + 1` tokens: target t is input t + 1."""
    rows = rows.astype(BATCH_DTYPE, copy=False)
    return rows[:, :-1], rows[:, 1:]


def synthetic_tokens(
    vocab_size: int, seq_len: int, batch_index: int, shard: Shard, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """One shard of one global batch of tokens drawn uniformly from `[0, vocab_size)`."""
    rows = np.empty((shard.size, seq_len + 1), dtype=BATCH_DTYPE)
    for row, sample in enumerate(range(shard.start, shard.stop)):
        rows[row] = np.random.default_rng([seed, batch_index, sample]).integers(0, vocab_size, seq_len + 1)
    return shifted(rows)


@dataclass(frozen=True)
class StreamDescription:
    """What `tokens.json` says of a stream folder."""

    tokenizer: dict[str, Any]
    """`name`, `vocab_size`, `end_of_text` (the token after each document), `files_sha256`."""
    corpus: dict[str, Any]
    """`name`, `documents`, `characters`, `sources_sha256`."""
    tokens: dict[str, int]
    """Tokens in each split's file, by split."""

    def to_json(self) -> str:
        body = {"format": STREAM_FORMAT, "dtype": TOKEN_DTYPE.str, "files": STREAM_FILES, **vars(self)}
        return json.dumps(body, indent=2) + "\n"

    @classmethod
    def read(cls, folder: Path) -> StreamDescription:
        path = folder / DESCRIPTION_FILE
        try:
            body = json.loads(read_regular(path))
            if body.get("format") != STREAM_FORMAT:
                raise ValueError(f"format {body.get('format')!r}, not {STREAM_FORMAT!r}")
            return cls(body["tokenizer"], body["corpus"], {split: int(body["tokens"][split]) for split in STREAM_FILES})
        except FileNotFoundError:
            raise UsageError(
                f"{folder}: no {DESCRIPTION_FILE}; write the stream with `mgbench prepare tokens`"
            ) from None
        except OSError as error:
            raise UsageError(f"cannot read {path}: {error.strerror}") from None
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise UsageError(f"{path}: not a token stream's description ({error})") from None

    @property
    def vocab_size(self) -> int:
        return int(self.tokenizer["vocab_size"])


class TokenStream:
    """One split of a stream folder, memory-mapped, read as random windows of `seq_len + 1` tokens."""

    def __init__(self, folder: Path, split: str = "train"):
        if split not in STREAM_FILES:
            raise ValueError(f"no split {split!r}; splits: {', '.join(STREAM_FILES)}")
        self.description = StreamDescription.read(folder)
        path = folder / STREAM_FILES[split]
        expected = self.description.tokens[split]
        try:
            size = path.stat().st_size
        except OSError as error:
            raise UsageError(f"cannot read {path}: {error.strerror}") from None
        if size != expected * TOKEN_DTYPE.itemsize or not expected:
            raise UsageError(f"{path}: {size} bytes, where {DESCRIPTION_FILE} says {expected} tokens of 2 bytes")
        self.tokens: np.ndarray = np.memmap(path, dtype=TOKEN_DTYPE, mode="r")
        self.path = path

    def __len__(self) -> int:
        return len(self.tokens)

    def steps_per_epoch(self, global_batch: int, seq_len: int) -> int:
        """Global batches per epoch: the stream's tokens over the tokens one global batch trains on."""
        return len(self) // (global_batch * seq_len)

    def check_batch(self, global_batch: int, seq_len: int) -> None:
        """Fail before any run starts when the stream cannot fill one window or one epoch's step."""
        if len(self) < seq_len + 1:
            raise UsageError(f"{self.path}: {len(self)} tokens, fewer than one window of {seq_len + 1}")
        if self.steps_per_epoch(global_batch, seq_len) < 1:
            raise UsageError(
                f"{self.path}: {len(self)} tokens cannot fill one global batch of {global_batch} x {seq_len}"
            )

    def batch(self, seq_len: int, batch_index: int, shard: Shard, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """One shard of one global batch: each row a window starting anywhere in the stream
        where `seq_len + 1` tokens fit, drawn from (seed, batch index, sample index)."""
        last_start = len(self) - seq_len - 1
        if last_start < 0:
            raise ValueError(f"{self.path}: {len(self)} tokens, fewer than one window of {seq_len + 1}")
        starts = np.array(
            [
                np.random.default_rng([seed, batch_index, sample]).integers(0, last_start, endpoint=True)
                for sample in range(shard.start, shard.stop)
            ],
            dtype=np.int64,
        )
        return shifted(self.tokens[starts[:, None] + np.arange(seq_len + 1)])
