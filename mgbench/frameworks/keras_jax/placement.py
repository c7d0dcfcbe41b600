"""How a keras-jax loader's batch of host-decoded pixels reaches the devices: its uint8 pixels
split along the batch axis over the mesh (device d holds the shared shard of rank d), for the
adapter to normalise there. `device_decode.py` is the other placement, for batches of files."""

from __future__ import annotations

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

    def pixels(self, batch: HostBatch, padded_to: int | None = None) -> jax.Array:
        """The batch's uint8 pixels sharded over the devices; with `padded_to`, zero images added
        up to that many so that a short batch shards evenly."""
        images = batch[0]
        if padded_to is not None:
            images = np.concatenate([images, np.zeros((padded_to - len(images), *images.shape[1:]), images.dtype)])
        return jax.device_put(images, self.sharding)
