"""One starting point for GPT-2 in every framework: the reference draw of its initial weights,
made with numpy from the shape alone (`core.gpt2`), so that a PyTorch and a Keras run of the same
shape and seed start from the same arrays, as `core.initial_weights` does for the image models.

The arrays are kept in the PyTorch module's names and layouts (`GPT2.arrays`); each framework
maps them onto its own variables and takes every one once (`InitialWeights.take`,
`check_all_taken`), and their digest names the start a run recorded.
"""

from __future__ import annotations

import numpy as np

from mgbench.core.gpt2 import GPT2
from mgbench.core.initial_weights import INIT_SAME, InitialWeights

STREAM = 0x6E72
"""Mixed into the seed, so that GPT-2's draw is not the image models' at the same seed."""


def gpt2_reference_weights(shape: GPT2, seed: int) -> InitialWeights:
    """GPT-2's initialisation of `shape` drawn with numpy's generator seeded by `seed` alone:
    every weight matrix and embedding normal (the residual projections at `GPT2.residual_std`),
    biases 0, layer norms at scale 1 and shift 0. The same arrays in every process and every
    framework's interpreter."""
    rng = np.random.default_rng([seed, STREAM])
    arrays = {}
    for array in shape.arrays():
        if array.std is None:
            arrays[array.name] = np.full(array.shape, array.fill, np.float32)
        else:
            arrays[array.name] = rng.standard_normal(array.shape, dtype=np.float32) * np.float32(array.std)
    return InitialWeights(arrays, INIT_SAME)
