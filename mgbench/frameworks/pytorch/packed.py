"""Several arrays handed over by a DataLoader worker as one tensor.

A worker hands each tensor of a batch over as a shared-memory block of its own, and the training
process takes each back on the DataLoader's pinning thread: unpickling it, receiving its file
descriptor from the worker, mapping it, then pinning it. That is Python work, holding the
interpreter's lock from the threads that launch the training step, once per tensor. A batch packed
into one buffer costs it once whatever the number of its arrays; the arrays come back as views of
the (pinned) buffer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch

DTYPES = (np.uint8, np.int64, np.float32, np.float64)
"""The element types a packed array may have, by their number in the header."""
TORCH_DTYPES = (torch.uint8, torch.int64, torch.float32, torch.float64)
MAX_RANK = 4
RECORD = 3 + MAX_RANK
"""int64s a packed array's header record takes: its byte offset, its type's number, its rank and
its sizes (zero past its rank)."""
ALIGNMENT = 8
"""Each array starts at a multiple of this many bytes, so that its view has its type's alignment."""


def packed(arrays: Sequence[np.ndarray]) -> torch.Tensor:
    """`arrays` (at most `MAX_RANK` dimensions, of the `DTYPES`) in one uint8 tensor: a header of
    int64s (the count, then a `RECORD` per array) and the arrays' bytes, each `ALIGNMENT`-aligned."""
    starts, position = [], ALIGNMENT * (1 + RECORD * len(arrays))
    for array in arrays:
        position = -(-position // ALIGNMENT) * ALIGNMENT
        starts.append(position)
        position += array.nbytes
    buffer = np.zeros(position, dtype=np.uint8)
    header = buffer[: starts[0]].view(np.int64)
    header[0] = len(arrays)
    for n, (array, start) in enumerate(zip(arrays, starts, strict=True)):
        sizes = [*array.shape, *[0] * (MAX_RANK - array.ndim)]
        header[1 + RECORD * n : 1 + RECORD * (n + 1)] = [start, DTYPES.index(array.dtype.type), array.ndim, *sizes]
        buffer[start : start + array.nbytes] = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
    return torch.from_numpy(buffer)


def unpacked(buffer: torch.Tensor) -> list[torch.Tensor]:
    """The arrays of `packed` as views of `buffer` (on the host: pinned, they copy without
    waiting), in their order."""
    host = buffer.numpy()
    count = int(host[:ALIGNMENT].view(np.int64)[0])
    records = host[ALIGNMENT : ALIGNMENT * (1 + RECORD * count)].view(np.int64).reshape(count, RECORD)
    parts = []
    for start, kind, rank, *sizes in records.tolist():
        dtype, shape = TORCH_DTYPES[kind], sizes[:rank]
        end = start + math.prod(shape) * dtype.itemsize
        parts.append(buffer[start:end].view(dtype).view(shape))
    return parts
