"""What every framework's same-start probe (`start_probe_<framework>.py`) feeds its model, and
the weights it loads."""

import numpy as np

from mgbench.core.initial_weights import InitialWeights, reference_weights
from mgbench.core.models import ModelSpec
from mgbench.datasets.synthetic import Shard, synthetic_batch

BATCH = 2
HEAD = "heads.head"
"""A transformer's head, drawn as zeros (torchvision's start): every logit would be 0 whatever
the body computes, so the probes draw it at random to compare what reaches it."""


def same_start_batch(spec: ModelSpec, size: int) -> np.ndarray:
    """The fixed batch, NCHW float32: a probe in channels_last transposes it."""
    return synthetic_batch(spec, size, 0, Shard(0, BATCH), seed=0)[0]


def start_weights(spec: ModelSpec, size: int) -> InitialWeights:
    """The `--init same` weights of `spec` at `size` px, a zero transformer head redrawn (`HEAD`)."""
    weights = reference_weights(spec, 0, size)
    if spec.transformer is not None:
        rng = np.random.default_rng(1)
        for name in (f"{HEAD}.weight", f"{HEAD}.bias"):
            weights.arrays[name] = rng.standard_normal(weights.arrays[name].shape).astype(np.float32)
    return weights
