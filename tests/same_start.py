"""What every framework's same-start probe (`start_probe_<framework>.py`) feeds its model."""

import numpy as np

from mgbench.common.models import ModelSpec
from mgbench.datasets.synthetic import Shard, synthetic_batch

BATCH = 2


def same_start_batch(spec: ModelSpec, size: int) -> np.ndarray:
    """The fixed batch, NCHW float32: a probe in channels_last transposes it."""
    return synthetic_batch(spec, size, 0, Shard(0, BATCH), seed=0)[0]
