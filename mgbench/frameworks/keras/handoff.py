"""Batches from Keras' loader worker processes to the training process through shared memory.

Keras' enqueuer returns whatever `PyDataset.__getitem__` returns from its pool workers pickled
through the pool's result pipe. For a batch of 128 RGB images at 224 px that is 19 MB copied on
both sides and read 64 KB at a time by a thread of the training process, which takes the GIL for
every read: on a fast step the pipe, not the workers' decoding, sets the loader's rate. A
`SharedArray` pickles instead as the name of a file in shared memory holding its bytes: only the
name crosses the pipe, and the training process maps the file (`mapped`) and unlinks it, so its
pages are freed with the array. Without pickling (a thread pool) it is an ordinary array.

Every file lives in a `HandOff` folder, removed with whatever is left in it (batches of a pool
stopped mid-epoch) when the loader that made it closes.
"""

from __future__ import annotations

import mmap
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

POPULATE = getattr(mmap, "MAP_POPULATE", 0)
"""Linux's flag to read a mapping's pages in when it is made."""
SHARED_MEMORY = Path("/dev/shm")
"""Linux's shared-memory file system: files there are pages of memory, never written to disk."""


class SharedArray(np.ndarray):
    """An array that pickles through a file in `folder` (see the module's docstring)."""

    folder: str | None = None

    def __array_finalize__(self, source: np.ndarray | None) -> None:
        self.folder = getattr(source, "folder", None)

    def __reduce__(self):
        if self.folder is None:
            return super().__reduce__()
        descriptor, path = tempfile.mkstemp(dir=self.folder, suffix=".batch")
        with os.fdopen(descriptor, "wb") as file:
            file.write(np.ascontiguousarray(self).data)
        return mapped, (path, self.dtype.str, self.shape)


def mapped(path: str, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    """The array in the file at `path`, mapped copy-on-write (writable, the file untouched), the
    file unlinked: nothing is copied, and the memory goes when the array does. The mapping's
    pages are faulted in here, in the enqueuer's result thread with the GIL released, rather
    than one by one on the training thread when it first reads the batch."""
    try:
        with open(path, "rb") as file:
            memory = mmap.mmap(
                file.fileno(), 0, flags=mmap.MAP_PRIVATE | POPULATE, prot=mmap.PROT_READ | mmap.PROT_WRITE
            )
        return np.frombuffer(memory, dtype=np.dtype(dtype)).reshape(shape)
    finally:
        os.unlink(path)


class HandOff:
    """A folder in shared memory (the temporary folder where there is none) for one loader's batches."""

    def __init__(self):
        root = SHARED_MEMORY if os.access(SHARED_MEMORY, os.W_OK) else None
        self.folder = tempfile.mkdtemp(prefix="mgbench-batches-", dir=root)

    def shared(self, array: np.ndarray) -> SharedArray:
        """`array` as a `SharedArray` handed over through this folder."""
        handed = np.ascontiguousarray(array).view(SharedArray)
        handed.folder = self.folder
        return handed

    def close(self) -> None:
        """Removes the folder and the batches no process took."""
        shutil.rmtree(self.folder, ignore_errors=True)


def handed(array: np.ndarray, handoff: HandOff | None) -> np.ndarray:
    """`array` as a worker hands it over: through `handoff` where the workers are processes (it
    pickles as a file name), itself where they are threads (no handoff, nothing pickled)."""
    return handoff.shared(array) if handoff else array
