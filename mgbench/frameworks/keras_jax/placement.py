"""How a keras-jax loader's batch of host-decoded pixels reaches the devices: its uint8 pixels
split along the batch axis over the mesh (device d holds the shared shard of rank d), for the
adapter to normalise there. `device_decode.py` is the other placement, for batches of files."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import jax
import numpy as np

from mgbench.datasets.images import host_decoder
from mgbench.frameworks.keras.data import HostBatch


@dataclass(frozen=True)
class ShardedPixels:
    """Places batches the loader's workers decoded; `note` says why a `--decode gpu` run decodes
    them there (`encoded.decode_site`)."""

    sharding: jax.sharding.NamedSharding
    note: str = ""

    @property
    def decoder(self) -> str:
        return host_decoder() + self.note

    def prepared(self, batches: Iterable[HostBatch], ahead: bool, padded_to: int | None = None) -> Iterator[HostBatch]:
        """The batches as the workers decoded them: placing one is a single copy, with nothing to
        do ahead of it (`ahead` is for the placement of files). With `padded_to`, zero images are
        added up to that many so that a short batch shards evenly (its labels stay the loader's)."""
        if padded_to is None:
            return iter(batches)
        return ((padded(images, padded_to), labels) for images, labels in batches)

    def pixels(self, batch: HostBatch) -> jax.Array:
        """The batch's uint8 pixels sharded over the devices."""
        return jax.device_put(batch[0], self.sharding)


def padded(images: np.ndarray, size: int) -> np.ndarray:
    """`images` with zero images after them up to `size`."""
    return np.concatenate([images, np.zeros((size - len(images), *images.shape[1:]), images.dtype)])
