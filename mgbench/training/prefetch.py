"""Items made on a thread of their own, up to `depth` ahead of the loop that takes them.

Putting a loader's batch where the step reads it is a copy out of pageable host memory
(JAX's `device_put` of a numpy array goes through a staging buffer, torch's `pin_memory` is a
copy into page-locked memory): on the training thread it lengthens every step, on this thread it
overlaps the step, as torch's DataLoader pins batches on a thread of its own and tf.data's
`prefetch_to_device` stages them.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator
from typing import Generic, TypeVar

Item = TypeVar("Item")
_END = object()
_PUT_WAIT_SECONDS = 0.1


class Ahead(Generic[Item]):
    """Iterates `items` on a daemon thread into a queue of `depth`; an exception there is raised
    here at the item it replaced. Closing it (or dropping it) stops the thread, which closes
    `items` (a generator's `finally` runs: a loader's worker pool stops)."""

    def __init__(self, items: Iterable[Item], depth: int = 2):
        self._queue: queue.Queue = queue.Queue(depth)
        self._stop = threading.Event()
        self._ended = False
        self._thread = threading.Thread(
            target=_fill, args=(iter(items), self._queue, self._stop), name="mgbench-ahead", daemon=True
        )
        self._thread.start()

    def __iter__(self) -> Iterator[Item]:
        return self

    def __next__(self) -> Item:
        if self._ended:
            raise StopIteration
        item = self._queue.get()
        if item is _END:
            self._ended = True
            raise StopIteration
        if isinstance(item, _Raised):
            self._ended = True
            raise item.error
        return item

    def close(self) -> None:
        """Stops the thread and waits for it (and the source's clean-up) to end."""
        self._stop.set()
        self._thread.join()

    def __del__(self) -> None:
        if hasattr(self, "_thread") and self._thread.ident is not None:
            self.close()


class _Raised:
    def __init__(self, error: BaseException):
        self.error = error


def _fill(items: Iterator, slots: queue.Queue, stop: threading.Event) -> None:
    """The thread's loop; it holds no reference to its `Ahead`, so dropping that closes it."""
    try:
        for item in items:
            if not _put(slots, stop, item):
                return
        _put(slots, stop, _END)
    except BaseException as error:  # handed to the consumer, raised there
        _put(slots, stop, _Raised(error))
    finally:
        close = getattr(items, "close", None)
        if close is not None:
            close()


def _put(slots: queue.Queue, stop: threading.Event, item: object) -> bool:
    """Waits for room, giving up (False) once the consumer has stopped."""
    while not stop.is_set():
        try:
            slots.put(item, timeout=_PUT_WAIT_SECONDS)
            return True
        except queue.Full:
            continue
    return False
