"""`Ahead` runs a source on its own thread: the same items in order, its errors raised where
they happened, never more than `depth` (plus the one being made) read ahead, and the source
closed when the consumer stops or drops it."""

import gc
import threading
import time

import pytest

from mgbench.training.prefetch import Ahead


class Source:
    """A generator's stand-in that records how far it was read and whether it was closed."""

    def __init__(self, count: int, fail_at: int | None = None):
        self.count, self.fail_at = count, fail_at
        self.made = 0
        self.closed = threading.Event()

    def items(self):
        try:
            for index in range(self.count):
                if index == self.fail_at:
                    raise ValueError(f"item {index} is corrupt")
                self.made += 1
                yield index
        finally:
            self.closed.set()


def settle(condition, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


def test_every_item_in_order_then_the_end():
    source = Source(50)
    ahead = Ahead(source.items(), depth=3)
    assert list(ahead) == list(range(50))
    assert next(ahead, "ended") == "ended"
    assert settle(source.closed.is_set)


def test_it_reads_no_further_than_its_depth_ahead():
    source = Source(100)
    ahead = Ahead(source.items(), depth=2)
    assert next(ahead) == 0
    settle(lambda: source.made >= 4, seconds=0.5)
    assert source.made <= 1 + 2 + 1
    ahead.close()


def test_an_error_in_the_source_is_raised_at_its_place():
    ahead = Ahead(Source(10, fail_at=3).items())
    assert [next(ahead) for _ in range(3)] == [0, 1, 2]
    with pytest.raises(ValueError, match="item 3 is corrupt"):
        next(ahead)
    assert next(ahead, "ended") == "ended"


def test_closing_or_dropping_it_closes_an_endless_source():
    closed = Source(10**9)
    ahead = Ahead(closed.items())
    next(ahead)
    ahead.close()
    assert closed.closed.is_set()

    dropped = Source(10**9)
    ahead = Ahead(dropped.items())
    next(ahead)
    del ahead
    gc.collect()
    assert settle(dropped.closed.is_set)
    assert not any(thread.name == "mgbench-ahead" for thread in threading.enumerate())
