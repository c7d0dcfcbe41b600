"""Token data for language models: synthetic batches, `mgbench prepare tokens` on a corpus and a
BPE made here (no download), the stream reader's windows, pinned downloads, and the refusals."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mgbench.cli import main
from mgbench.core.errors import UsageError
from mgbench.core.models import model_spec
from mgbench.datasets.bpe import END_OF_TEXT, Tokenizer, byte_ranks, data_gym_bytes, mergeable_ranks
from mgbench.datasets.downloads import PinnedFile, file_sha256
from mgbench.datasets.output import MANIFEST
from mgbench.datasets.resolve import describe_dataset
from mgbench.datasets.synthetic import Shard
from mgbench.datasets.tokenise import VAL_PERCENT
from mgbench.datasets.tokens import (
    DESCRIPTION_FILE,
    STREAM_FILES,
    VALIDATION_BATCHES,
    StreamDescription,
    TokenBatches,
    TokenBatchIndices,
    TokenDataset,
    TokenStream,
    synthetic_tokens,
)

MERGES = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("Ġ", "b"), ("Ġb", "e"), ("o", "r"), ("Ġ", "s"), ("i", "s")]
DOCUMENTS = {
    "a.txt": "To be, or not to be: that is the question.\nWhether 'tis nobler in the mind to suffer\n",
    "b/c.txt": "The rest is silence. Café, naïve — ☕ and tabs\tend here.\n",
}


def one_error_line(capsys: pytest.CaptureFixture, args: list[str], message: str) -> None:
    """`mgbench ARGS` exits 2 with one line `mgbench: error: ...` holding `message`."""
    assert main(args) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mgbench: error: ") and message in lines[0], lines


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def write_bpe(folder: Path, merges: list[tuple[str, str]]) -> Path:
    """`vocab.bpe` and `encoder.json` in GPT-2's format: the 256 bytes, the merges, `<|endoftext|>`."""
    char_of = {byte: char for char, byte in data_gym_bytes().items()}
    encoder = {char_of[byte]: rank for rank, byte in enumerate(byte_ranks())}
    for first, second in merges:
        encoder[first + second] = len(encoder)
    encoder[END_OF_TEXT] = len(encoder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.bpe").write_text("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges), encoding="utf-8")
    (folder / "encoder.json").write_text(json.dumps(encoder), encoding="utf-8")
    return folder


def write_corpus(folder: Path) -> Path:
    for name, text in DOCUMENTS.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """mgbench's cache folder for the test: nothing read from or written to the user's."""
    monkeypatch.setenv("MGBENCH_WORK_CACHE", str(tmp_path / "cache" / "work.json"))
    return tmp_path / "cache"


def prepare_args(tmp_path: Path, out: Path, *extra: str) -> list[str]:
    bpe = write_bpe(tmp_path / "bpe", MERGES)
    corpus = write_corpus(tmp_path / "corpus")
    return ["prepare", "tokens", str(out), "--corpus", str(corpus), "--tokenizer", f"bpe:{bpe}", *extra]


def write_stream(folder: Path, tokens: np.ndarray, vocab_size: int = 65536) -> Path:
    """A stream folder whose training split is `tokens`, as `prepare tokens` lays it out."""
    folder.mkdir(parents=True)
    (folder / STREAM_FILES["train"]).write_bytes(tokens.astype("<u2").tobytes())
    (folder / STREAM_FILES["val"]).write_bytes(tokens[:2].astype("<u2").tobytes())
    description = StreamDescription({"vocab_size": vocab_size}, {}, {"train": len(tokens), "val": 2})
    (folder / DESCRIPTION_FILE).write_text(description.to_json())
    return folder


# Synthetic batches.


def test_synthetic_tokens_are_shifted_rows_in_the_vocabulary_and_the_same_from_the_same_seed():
    whole = Shard(0, 8)
    inputs, targets = synthetic_tokens(1000, 16, batch_index=3, shard=whole, seed=7)
    assert inputs.shape == targets.shape == (8, 16) and inputs.dtype == targets.dtype == np.int32
    assert (inputs[:, 1:] == targets[:, :-1]).all()
    assert inputs.min() >= 0 and max(inputs.max(), targets.max()) < 1000
    assert len(np.unique(np.concatenate([inputs, targets]))) > 100  # drawn over the vocabulary, not a corner
    again = synthetic_tokens(1000, 16, batch_index=3, shard=whole, seed=7)
    assert (again[0] == inputs).all() and (again[1] == targets).all()
    for other in (synthetic_tokens(1000, 16, 3, whole, seed=8), synthetic_tokens(1000, 16, 4, whole, seed=7)):
        assert (other[0] != inputs).any()


def test_synthetic_tokens_of_each_shard_are_the_whole_batch_s_rows():
    whole = synthetic_tokens(50304, 32, 0, Shard(0, 8), seed=1)
    halves = [synthetic_tokens(50304, 32, 0, Shard.of_rank(rank, 2, 8), seed=1) for rank in (0, 1)]
    assert (np.concatenate([half[0] for half in halves]) == whole[0]).all()
    assert (np.concatenate([half[1] for half in halves]) == whole[1]).all()


# The tokenizer.


def test_ranks_read_from_gpt2_format_files_are_tiktoken_s(tmp_path, monkeypatch):
    from tiktoken.load import data_gym_to_mergeable_bpe_ranks

    folder = write_bpe(tmp_path / "bpe", MERGES)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")  # tiktoken reads the files, copies them nowhere
    theirs = data_gym_to_mergeable_bpe_ranks(str(folder / "vocab.bpe"), str(folder / "encoder.json"))
    ours = mergeable_ranks((folder / "vocab.bpe").read_bytes(), (folder / "encoder.json").read_bytes(), "test")
    assert ours == theirs and ours[b" the"] == 258 and ours[b"\x00"] == 188


# prepare tokens.


def test_prepare_tokens_writes_streams_that_decode_to_the_corpus(tmp_path, capsys, cache):
    out = tmp_path / "out"
    assert main(prepare_args(tmp_path, out)) == 0
    assert "2 documents" in capsys.readouterr().err
    tokenizer = Tokenizer.from_folder(tmp_path / "bpe")
    train = np.fromfile(out / "train.bin", dtype="<u2")
    val = np.fromfile(out / "val.bin", dtype="<u2")
    documents = [DOCUMENTS[name] for name in sorted(DOCUMENTS)]
    assert tokenizer.decode([*train, *val]) == "".join(text + END_OF_TEXT for text in documents)
    assert len(val) == (len(train) + len(val)) * VAL_PERCENT // 100 > 0
    assert tokenizer.encode(" the") == [258]  # the merges are applied, not bytes alone
    description = json.loads((out / DESCRIPTION_FILE).read_text())
    assert description["tokens"] == {"train": len(train), "val": len(val)}
    assert description["tokenizer"]["vocab_size"] == 256 + len(MERGES) + 1
    assert description["tokenizer"]["end_of_text"] == 256 + len(MERGES) == train[len(tokenizer.encode(documents[0]))]
    assert description["tokenizer"]["files_sha256"]["vocab.bpe"] == file_sha256(tmp_path / "bpe" / "vocab.bpe")
    assert description["corpus"]["sources_sha256"] == {
        name: file_sha256(tmp_path / "corpus" / name) for name in DOCUMENTS
    }
    stream = TokenStream(out, "val")
    assert (np.asarray(stream.tokens) == val).all() and stream.description.vocab_size == 256 + len(MERGES) + 1


def test_prepare_tokens_overwrites_only_its_own_output(tmp_path, capsys, cache):
    out = tmp_path / "out"
    args = prepare_args(tmp_path, out)
    assert main(args) == 0
    capsys.readouterr()
    one_error_line(capsys, args, "is not empty")
    assert main([*args, "--overwrite"]) == 0
    capsys.readouterr()
    (out / "notes.txt").write_text("mine")
    (out / MANIFEST).write_text("notes.txt\n")
    one_error_line(capsys, [*args, "--overwrite"], "was not written by mgbench")
    assert (out / "notes.txt").read_text() == "mine"


def test_prepare_tokens_refuses_a_used_folder_before_reading_the_corpus(tmp_path, capsys, cache):
    out = tmp_path / "out"
    out.mkdir()
    (out / "train.bin").write_bytes(b"user's")
    one_error_line(capsys, ["prepare", "tokens", str(out), "--corpus", str(tmp_path / "none")], "is not empty")
    assert snapshot(out) == {"train.bin": b"user's"} and not (cache / "downloads").exists()


@pytest.mark.parametrize(
    "corpus, tokenizer, message",
    [
        ("{tmp}/missing", "bpe:{bpe}", "no such file or folder"),
        ("{tmp}/empty", "bpe:{bpe}", "no .txt file in it"),
        ("{tmp}/blank.txt", "bpe:{bpe}", "no text in it"),
        ("{tmp}/latin1.txt", "bpe:{bpe}", "not UTF-8 text"),
        ("{corpus}", "bpe:{tmp}/empty", "cannot read vocab.bpe"),
        ("{corpus}", "bpe:{tmp}/huge", "more than the 65536 a uint16 stream holds"),
        ("{corpus}", "bpe:{tmp}/disagree", "does not give the tokens of vocab.bpe their ranks"),
        ("{corpus}", "gtp2", "unknown tokenizer 'gtp2'"),
    ],
)
def test_prepare_tokens_refusals_are_one_line_and_write_nothing(tmp_path, capsys, cache, corpus, tokenizer, message):
    (tmp_path / "empty").mkdir()
    (tmp_path / "blank.txt").write_text("")
    (tmp_path / "latin1.txt").write_bytes("naïve".encode("latin-1"))
    if "huge" in tokenizer:  # 256 bytes, 65,280 merges and <|endoftext|>: 65,537 tokens
        write_bpe(tmp_path / "huge", [(a, b) for a in data_gym_bytes() for b in data_gym_bytes()][: 65536 - 256])
    disagree = write_bpe(tmp_path / "disagree", MERGES)
    (disagree / "vocab.bpe").write_text("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in reversed(MERGES)))
    places = {"tmp": tmp_path, "bpe": write_bpe(tmp_path / "bpe", MERGES), "corpus": write_corpus(tmp_path / "corpus")}
    out = tmp_path / "out"
    one_error_line(
        capsys,
        ["prepare", "tokens", str(out), "--corpus", corpus.format(**places), "--tokenizer", tokenizer.format(**places)],
        message,
    )
    assert not out.exists()


def test_prepare_tokens_without_tiktoken_says_so_in_one_line(tmp_path, capsys, cache, monkeypatch):
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    one_error_line(capsys, prepare_args(tmp_path, tmp_path / "out"), "which is not installed: pip install tiktoken")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("where", ["corpus", "corpus/out"])
def test_prepare_tokens_refuses_an_out_inside_its_corpus(tmp_path, capsys, cache, where):
    args = prepare_args(tmp_path, tmp_path / where, "--overwrite")
    before = snapshot(tmp_path / "corpus")
    one_error_line(capsys, args, "overlaps the source")
    assert snapshot(tmp_path / "corpus") == before


def test_mgbench_help_imports_no_tokenizer():
    code = "import sys; from mgbench.cli import build_parser; build_parser(); print('tiktoken' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


# The stream reader.


def test_a_window_is_seq_len_plus_one_consecutive_tokens_drawn_from_the_seed(tmp_path):
    stream = TokenStream(write_stream(tmp_path / "s", np.arange(3000)))
    inputs, targets = stream.batch(seq_len=64, batch_index=5, shard=Shard(0, 16), seed=3)
    assert inputs.shape == targets.shape == (16, 64) and inputs.dtype == np.int32
    assert (targets == inputs + 1).all()  # the stream counts up: each row is a window, targets shifted by one
    assert (np.diff(inputs, axis=1) == 1).all()
    assert inputs[:, 0].min() >= 0 and targets[:, -1].max() <= 2999
    again = stream.batch(64, 5, Shard(0, 16), seed=3)
    assert (again[0] == inputs).all()
    assert (stream.batch(64, 5, Shard(0, 16), seed=4)[0][:, 0] != inputs[:, 0]).any()
    assert (stream.batch(64, 6, Shard(0, 16), seed=3)[0][:, 0] != inputs[:, 0]).any()
    halves = [stream.batch(64, 5, Shard.of_rank(rank, 2, 16), seed=3)[0] for rank in (0, 1)]
    assert (np.concatenate(halves) == inputs).all()


def test_windows_start_anywhere_a_whole_window_fits(tmp_path):
    stream = TokenStream(write_stream(tmp_path / "s", np.arange(12)))
    starts = {int(row[0]) for index in range(60) for row in stream.batch(8, index, Shard(0, 4), seed=0)[0]}
    assert starts == {0, 1, 2, 3}  # 12 tokens hold windows of 9 at 0..3, the last one included


def test_an_epoch_is_the_stream_over_a_global_batch_s_tokens(tmp_path):
    stream = TokenStream(write_stream(tmp_path / "s", np.arange(10_000)))
    assert stream.steps_per_epoch(global_batch=8, seq_len=100) == 12
    stream.check_batch(8, 100)
    with pytest.raises(UsageError, match="cannot fill one global batch of 16 x 1024"):
        stream.check_batch(16, 1024)
    with pytest.raises(UsageError, match="fewer than one window of 10001"):
        stream.check_batch(1, 10_000)


def test_the_reader_refuses_a_folder_that_is_not_a_whole_stream(tmp_path):
    with pytest.raises(UsageError, match="no tokens.json"):
        TokenStream(tmp_path)
    folder = write_stream(tmp_path / "s", np.arange(100))
    with open(folder / "train.bin", "ab") as handle:
        handle.write(b"\0")
    with pytest.raises(UsageError, match="201 bytes, where tokens.json says 100 tokens"):
        TokenStream(folder)
    (folder / DESCRIPTION_FILE).write_text('{"format": "other"}')
    with pytest.raises(UsageError, match="not a token stream's description"):
        TokenStream(folder)


# A stream as a dataset (`--dataset tokens:PATH`).


def write_splits(folder: Path, train: np.ndarray, val: np.ndarray, vocab_size: int = 512) -> Path:
    """A stream folder of these two splits, as `prepare tokens` lays it out."""
    folder.mkdir(parents=True)
    for split, tokens in (("train", train), ("val", val)):
        (folder / STREAM_FILES[split]).write_bytes(tokens.astype("<u2").tobytes())
    description = StreamDescription({"vocab_size": vocab_size}, {}, {"train": len(train), "val": len(val)})
    (folder / DESCRIPTION_FILE).write_text(description.to_json())
    return folder


def test_a_token_dataset_trains_on_train_and_validates_on_val_which_stands_for_test(tmp_path):
    dataset = describe_dataset(f"tokens:{write_splits(tmp_path / 's', np.arange(1000), np.arange(2000, 2100))}")
    assert isinstance(dataset, TokenDataset)
    assert dataset.steps_per_epoch(global_batch=4, seq_len=20) == 12
    assert dataset.stream("train").tokens[0] == 0 and dataset.stream("val").tokens[0] == 2000
    assert dataset.stream("test").path == dataset.stream("val").path
    assert dataset.validation_batches(4, 20) == 1  # 100 tokens fill one global batch of 80
    assert dataset.validation_batches(1, 2) == VALIDATION_BATCHES  # 50 would fit: at most 32
    assert dataset.validation_batches(4, 50) == 1  # none fits whole: windows may overlap
    dataset.check_batch(4, 50)
    with pytest.raises(UsageError, match="cannot fill one global batch of 32 x 50"):
        dataset.check_batch(32, 50)
    with pytest.raises(UsageError, match="val.bin: 100 tokens, fewer than one window of 101"):
        dataset.check_batch(1, 100)


def test_a_token_dataset_feeds_a_language_model_whose_vocabulary_holds_its_tokens(tmp_path):
    dataset = TokenDataset.describe(write_splits(tmp_path / "s", np.arange(100), np.arange(10), vocab_size=600))
    assert "tiny trains on images (32 px)" in dataset.input_refusal(model_spec("tiny"))
    assert "vocabulary of 600 tokens is larger than gpt2-tiny's 512" in dataset.input_refusal(model_spec("gpt2-tiny"))
    assert dataset.input_refusal(model_spec("gpt2")) is None
    with pytest.raises(UsageError, match="is not a folder; tokens:PATH takes the folder"):
        describe_dataset(f"tokens:{tmp_path / 's' / 'train.bin'}")
    with pytest.raises(UsageError, match="no tokens.json"):
        describe_dataset(f"tokens:{tmp_path}")


def test_each_shard_of_a_global_batch_reads_its_rows_and_each_epoch_its_own_batches(tmp_path):
    stream = TokenStream(write_splits(tmp_path / "s", np.arange(5000), np.arange(10)))
    whole = TokenBatches(stream, 16, Shard(0, 8), seed=2)[7]
    halves = [TokenBatches(stream, 16, Shard.of_rank(rank, 2, 8), seed=2)[7] for rank in (0, 1)]
    for part in (0, 1):
        assert (np.concatenate([half[part] for half in halves]) == whole[part]).all()
    indices = TokenBatchIndices(steps_per_epoch=3)
    assert len(indices) == 3 and list(indices) == [0, 1, 2]
    indices.start(2)
    assert list(indices) == [6, 7, 8]
    indices.start(None)
    assert list(itertools.islice(indices, 7)) == list(range(7))


# Pinned downloads.


def pinned(content: bytes, script: str) -> PinnedFile:
    import hashlib

    return PinnedFile("f.tgz", hashlib.sha256(content).hexdigest(), (sys.executable, "-c", script), "the test file")


def test_a_pinned_file_is_fetched_once_and_kept_under_its_name(tmp_path):
    file = pinned(b"payload", f"open('f.tgz', 'wb').write(b'payload'); open({str(tmp_path / 'ran')!r}, 'a').write('x')")
    path = file.fetched(tmp_path)
    assert path == tmp_path / "downloads" / "f.tgz" and path.read_bytes() == b"payload"
    assert file.fetched(tmp_path) == path
    assert (tmp_path / "ran").read_text() == "x"  # fetched by the first call; the second found it in the cache
    assert sorted(p.name for p in (tmp_path / "downloads").iterdir()) == ["f.tgz"]


def test_a_fetch_that_fails_or_brings_other_bytes_leaves_nothing_under_the_name(tmp_path):
    with pytest.raises(UsageError, match="sha256 is"):
        pinned(b"payload", "open('f.tgz', 'wb').write(b'other')").fetched(tmp_path)
    with pytest.raises(UsageError, match=r"cannot fetch f.tgz .*\(no route\); put the test file at"):
        pinned(b"payload", "import sys; sys.exit('no route')").fetched(tmp_path)
    missing = PinnedFile("f.tgz", "0" * 64, ("no-such-client-here",), "the test file")
    with pytest.raises(UsageError, match="no-such-client-here is not installed"):
        missing.fetched(tmp_path)
    assert list((tmp_path / "downloads").iterdir()) == []


def test_a_file_put_under_the_name_that_is_not_the_pinned_one_is_refused_and_kept(tmp_path):
    (tmp_path / "downloads").mkdir()
    (tmp_path / "downloads" / "f.tgz").write_bytes(b"someone's")
    with pytest.raises(UsageError, match="is not the test file: its sha256 is"):
        pinned(b"payload", "open('f.tgz', 'wb').write(b'payload')").fetched(tmp_path)
    assert (tmp_path / "downloads" / "f.tgz").read_bytes() == b"someone's"
