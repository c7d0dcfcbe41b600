"""Keras loader workers hand batches over through shared memory: what crosses the pipe is a file
name, what arrives is the worker's array, and no file outlives the batch or the loader."""

import multiprocessing
import os
import pickle
from multiprocessing.reduction import ForkingPickler

import numpy as np

from mgbench.frameworks.keras.handoff import HandOff, SharedArray


def pixels(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, size=(8, 32, 32, 3), dtype=np.uint8)


def test_a_handed_array_crosses_as_a_file_name_and_arrives_whole():
    handoff = HandOff()
    try:
        sent = pixels(0)
        message = bytes(ForkingPickler.dumps(handoff.shared(sent)))
        assert len(message) < 1000 < sent.nbytes
        assert len(os.listdir(handoff.folder)) == 1
        received = pickle.loads(message)
        assert type(received) is np.ndarray
        np.testing.assert_array_equal(received, sent)
        assert os.listdir(handoff.folder) == []
        received[0, 0, 0, 0] += 1
        assert received.flags.writeable
    finally:
        handoff.close()
    assert not os.path.exists(handoff.folder)


def test_without_a_folder_it_pickles_as_the_array_itself():
    array = pixels(1).view(SharedArray)
    assert array.folder is None
    message = ForkingPickler.dumps(array)
    assert len(message) > array.nbytes
    np.testing.assert_array_equal(pickle.loads(message), pixels(1))


def make_batch(args: tuple[HandOff, int]) -> np.ndarray:
    handoff, seed = args
    return handoff.shared(pixels(seed))


def test_batches_from_worker_processes_arrive_in_order_and_leave_nothing_behind():
    handoff = HandOff()
    try:
        with multiprocessing.get_context("spawn").Pool(2) as pool:
            batches = pool.map(make_batch, [(handoff, seed) for seed in range(6)])
        for seed, batch in enumerate(batches):
            np.testing.assert_array_equal(batch, pixels(seed))
        assert os.listdir(handoff.folder) == []
    finally:
        handoff.close()


def test_closing_removes_batches_no_process_took():
    handoff = HandOff()
    ForkingPickler.dumps(handoff.shared(pixels(2)))
    assert len(os.listdir(handoff.folder)) == 1
    handoff.close()
    assert not os.path.exists(handoff.folder)
