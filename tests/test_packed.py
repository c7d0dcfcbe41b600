"""`frameworks/pytorch/packed.py`: a worker's arrays in one buffer, back as views of it."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from mgbench.frameworks.pytorch.packed import packed, unpacked


def test_arrays_of_every_type_and_rank_come_back_equal_as_views_of_one_buffer():
    rng = np.random.default_rng(0)
    arrays = [
        rng.integers(0, 256, 1001, dtype=np.uint8),
        np.arange(5, dtype=np.int64),
        rng.random((5, 5), dtype=np.float32),
        rng.random((3, 5)),
        np.zeros(0, dtype=np.int64),
        rng.integers(-9, 9, (2, 3, 4, 5)),
        np.float32(3).reshape(()),
        np.asfortranarray(rng.random((4, 3), dtype=np.float32)),
    ]
    buffer = packed(arrays)
    parts = unpacked(buffer)
    assert len(parts) == len(arrays)
    for part, array in zip(parts, arrays, strict=True):
        assert part.numpy().dtype == array.dtype and np.array_equal(part.numpy(), array)
        assert part.untyped_storage().data_ptr() == buffer.untyped_storage().data_ptr()
        assert part.data_ptr() % 8 == buffer.data_ptr() % 8


def test_a_type_the_header_cannot_name_is_refused():
    with pytest.raises(ValueError):
        packed([np.zeros(3, dtype=np.int16)])


ARRAYS = [np.arange(7, dtype=np.int64), np.linspace(0, 1, 6, dtype=np.float32).reshape(2, 3)]


def packed_arrays(_: list[int]) -> torch.Tensor:
    return packed(ARRAYS)


def test_a_packed_batch_crosses_a_dataloader_worker_whole():
    """The DataLoader's workers hand the buffer over as one tensor; its arrays come back intact."""
    loader = torch.utils.data.DataLoader(range(2), batch_size=1, num_workers=1, collate_fn=packed_arrays)
    for buffer in loader:
        for part, array in zip(unpacked(buffer), ARRAYS, strict=True):
            assert np.array_equal(part.numpy(), array)
