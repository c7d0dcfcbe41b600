"""A JAX step's state held as one flat array per dtype instead of hundreds of small ones.

Why: a jitted step pays host time for every argument buffer on every call and on every device
(donation checks, output arrays to create, donated inputs to free), and with each step
synchronised for timing, that host time is time the GPUs sit idle. ResNet-50's Keras state is
hundreds of arrays (weights, batch-norm statistics, optimizer slots, metrics); the profile
of the GPUs' idle gaps between steps before and after packing is in BENCHMARKS.md. The
step takes one array per dtype; inside it the unpacking is slicing and the packing one
concatenation, copies the GPU makes in a fraction of a millisecond.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

Packed = dict[str, jax.Array]


class PackedTree:
    """Packs pytrees shaped like `example` into {dtype name: flat array} and back, exactly."""

    def __init__(self, example: Any):
        leaves, self.treedef = jax.tree.flatten(example)
        self.shapes = [tuple(np.shape(leaf)) for leaf in leaves]
        # dtype name -> [(leaf index, offset, size)], leaves of a dtype laid end to end.
        self.layout: dict[str, list[tuple[int, int, int]]] = {}
        ends: dict[str, int] = {}
        for index, leaf in enumerate(leaves):
            name = jnp.dtype(leaf.dtype).name
            size = int(np.prod(self.shapes[index], dtype=np.int64))
            offset = ends.get(name, 0)
            self.layout.setdefault(name, []).append((index, offset, size))
            ends[name] = offset + size

    def pack(self, tree: Any) -> Packed:
        leaves = self.treedef.flatten_up_to(tree)
        return {
            name: jnp.concatenate([jnp.ravel(leaves[index]) for index, _, _ in slots])
            for name, slots in self.layout.items()
        }

    def unpack(self, packed: Packed) -> Any:
        leaves: list[Any] = [None] * len(self.shapes)
        for name, slots in self.layout.items():
            for index, offset, size in slots:
                leaves[index] = packed[name][offset : offset + size].reshape(self.shapes[index])
        return self.treedef.unflatten(leaves)
