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

`--dataset tokens:PATH` names such a folder: `TokenDataset` is its description, as
`description.DatasetDescription` is an image dataset's, and every framework's loader reads it
through the same two framework-free parts: `TokenBatches` (batch index -> this process's shard of
that global batch) and `TokenBatchIndices` (which global batches an epoch, or an endless run,
reads), so every framework trains on the same windows in the same order.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from mgbench.core.errors import UsageError
from mgbench.core.inputs import TokenInput
from mgbench.core.models import ModelSpec
from mgbench.core.safe_files import read_regular
from mgbench.datasets.synthetic import HELD_OUT_BATCH, POOL_BATCHES, Shard

TOKEN_DTYPE = np.dtype("<u2")
"""How a stream holds its tokens on disk: a vocabulary of at most 65,536 (GPT-2's is 50,257)."""
BATCH_DTYPE = np.int32
DESCRIPTION_FILE = "tokens.json"
STREAM_FORMAT = "mgbench-token-stream-1"
STREAM_FILES = {"train": "train.bin", "val": "val.bin"}
VALIDATION_BATCHES = 32
"""The most global batches of windows one validation of a stream scores: as many as its `val`
split's tokens fill, at least one and at most these, so that a validation after each epoch costs
a few steps' time however large the corpus."""

TokenBatch = tuple[np.ndarray, np.ndarray]
"""`(inputs, targets)`, each `(samples, seq_len)` int32, the targets the inputs shifted by one."""


def shifted(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Inputs and targets from rows of `seq_len + 1` tokens: target t is input t + 1. Each is an
    array of its own, contiguous, as pinned memory and a copy to the device take it whole."""
    rows = rows.astype(BATCH_DTYPE, copy=False)
    return np.ascontiguousarray(rows[:, :-1]), np.ascontiguousarray(rows[:, 1:])


def synthetic_tokens(
    vocab_size: int, seq_len: int, batch_index: int, shard: Shard, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """One shard of one global batch of tokens drawn uniformly from `[0, vocab_size)`."""
    rows = np.empty((shard.size, seq_len + 1), dtype=BATCH_DTYPE)
    for row, sample in enumerate(range(shard.start, shard.stop)):
        rows[row] = np.random.default_rng([seed, batch_index, sample]).integers(0, vocab_size, seq_len + 1)
    return shifted(rows)


def synthetic_token_pool(vocab_size: int, seq_len: int, shard: Shard, seed: int) -> list[TokenBatch]:
    """The token batches a process cycles through in a run on synthetic data, as `synthetic.synthetic_pool`
    gives images: `POOL_BATCHES` global batches, this process's shard of each."""
    return [synthetic_tokens(vocab_size, seq_len, index, shard, seed) for index in range(POOL_BATCHES)]


def held_out_tokens(vocab_size: int, seq_len: int, shard: Shard, seed: int) -> TokenBatch:
    """A batch never trained on (global batch `HELD_OUT_BATCH`), which a run on synthetic data validates on."""
    return synthetic_tokens(vocab_size, seq_len, HELD_OUT_BATCH, shard, seed)


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

    def check_window(self, seq_len: int) -> None:
        """Fail before any run starts when the stream cannot fill one window of `seq_len + 1` tokens."""
        if len(self) < seq_len + 1:
            raise UsageError(f"{self.path}: {len(self)} tokens, fewer than one window of {seq_len + 1}")

    def check_batch(self, global_batch: int, seq_len: int) -> None:
        """Fail before any run starts when the stream cannot fill one window or one epoch's step."""
        self.check_window(seq_len)
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


HELD_OUT_SPLITS = {"val": "val", "test": "val"}
"""The stream split each held-out split `Adapter.evaluate` names reads: a stream is split by
position into a training and one held-out part, so its test split is its validation split."""


@dataclass(frozen=True)
class TokenDataset:
    """`--dataset tokens:PATH`: a stream folder written by `mgbench prepare tokens`, as a run reads it.

    Its `train` split is trained on; its `val` split is validated on after each epoch and also
    stands for the `test` split scored after the last, which a stream has none of
    (`HELD_OUT_SPLITS`). It feeds a language model (`TokenInput`) whose vocabulary holds the
    stream's tokens, and nothing else (`input_refusal`)."""

    root: Path
    description: StreamDescription
    kind: ClassVar[str] = "tokens"
    notes: ClassVar[tuple[str, ...]] = ()
    """What the check before launching says of the dataset: nothing, for a stream."""

    @classmethod
    def describe(cls, root: Path) -> TokenDataset:
        """The stream folder at `root`, its `tokens.json` read (one UsageError where it cannot be)."""
        return cls(root, StreamDescription.read(root))

    def stream(self, split: str) -> TokenStream:
        """The `train` split, or the stream a held-out split reads (`HELD_OUT_SPLITS`), memory-mapped."""
        return TokenStream(self.root, split if split == "train" else HELD_OUT_SPLITS[split])

    def task_spec(self, spec: ModelSpec) -> ModelSpec:
        """The model as this dataset's task shapes it: as it is (its vocabulary is checked to hold
        the stream's, `input_refusal`, and its objective is already the next token's)."""
        return spec

    def input_refusal(self, spec: ModelSpec) -> str | None:
        """Why `spec` cannot train on this stream (None: it can): it is no language model, or its
        vocabulary is smaller than the stream's tokenizer's."""
        if not isinstance(spec.input, TokenInput):
            return (
                f"--dataset tokens:{self.root} is a token stream, for a language model, and {spec.name} trains "
                f"on images ({spec.input.describe()}): give it synthetic data or an image dataset"
            )
        if self.description.vocab_size > spec.input.vocabulary:
            return (
                f"--dataset tokens:{self.root}: its tokenizer's vocabulary of {self.description.vocab_size:,} "
                f"tokens is larger than {spec.name}'s {spec.input.vocabulary:,}"
            )
        return None

    def steps_per_epoch(self, global_batch: int, seq_len: int) -> int:
        """Global batches in one epoch of the training split (`TokenStream.steps_per_epoch`)."""
        return self.stream("train").steps_per_epoch(global_batch, seq_len)

    def validation_batches(self, global_batch: int, seq_len: int) -> int:
        """Global batches of windows one validation scores: as many as the `val` split's tokens
        fill, from 1 to `VALIDATION_BATCHES` (windows drawn at random may overlap, so the split
        needs to hold only one)."""
        return max(1, min(VALIDATION_BATCHES, self.stream("val").steps_per_epoch(global_batch, seq_len)))

    def check_batch(self, global_batch: int, seq_len: int) -> None:
        """Fail before any run starts when the training split cannot fill one global batch of
        `seq_len`-token samples, or the validation split one window."""
        self.stream("train").check_batch(global_batch, seq_len)
        self.stream("val").check_window(seq_len)


@dataclass(frozen=True)
class TokenBatches:
    """A map from a global batch's index to this process's `shard` of it, drawn from `stream`
    (`TokenStream.batch`) at `seed`: what a framework's map-style loader reads (torch's DataLoader
    with the batch index as its key), the same windows in every framework."""

    stream: TokenStream
    seq_len: int
    shard: Shard
    seed: int

    def __getitem__(self, batch_index: int) -> TokenBatch:
        return self.stream.batch(self.seq_len, batch_index, self.shard, self.seed)


class TokenBatchIndices:
    """The global batches a training loader reads, by index: epoch `e`'s are `e * steps` to
    `(e + 1) * steps - 1` (each drawn from its own index, so no two epochs read the same windows),
    set with `start` before each of the loader's iterators as `sampling.EpochBatchKeys` is; `start(None)`
    reads every epoch's from the first on, endless (a run timed in steps)."""

    def __init__(self, steps_per_epoch: int):
        self.steps = steps_per_epoch
        self.epoch: int | None = 0

    def __len__(self) -> int:
        return self.steps

    def start(self, epoch: int | None) -> None:
        self.epoch = epoch

    def __iter__(self) -> Iterator[int]:
        if self.epoch is None:
            return itertools.count()
        return iter(range(self.epoch * self.steps, (self.epoch + 1) * self.steps))
