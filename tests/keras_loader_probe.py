"""Run inside a Keras environment by tests/test_keras_data.py: what a Keras adapter's real-data
loader hands each device, without training.

Builds the adapter of FRAMEWORK and STRATEGY for the config (2 CPU devices, a real dataset) as a
run would, takes every batch of epochs 0 and 1 from `epoch_batches`, and writes an .npz with each
device's images and labels per (epoch, step); plus, for keras-torch's loader (one process per
device), rank 1's uint8 pixels and labels from `RealData.train` with that rank's shard. The test,
in the orchestrator's environment, compares them with the shared reader.

    python tests/keras_loader_probe.py FRAMEWORK STRATEGY CONFIG_JSON OUT.npz
"""

import os
import sys

import numpy as np

from mgbench.core.config import RunConfig
from mgbench.datasets.synthetic import Shard
from mgbench.frameworks.registry import create_adapter, framework_spec

EPOCHS = (0, 1)


def per_device(framework: str, adapter, batch) -> list[tuple[np.ndarray, np.ndarray]]:
    """(images, labels) of each device, in device order, as host arrays."""
    if framework == "keras-jax":
        return list(
            zip(
                *(
                    [np.asarray(s.data) for s in sorted(a.addressable_shards, key=lambda s: s.index[0].start)]
                    for a in batch
                )
            )
        )
    strategy = adapter.distribution
    values = adapter.replica_inputs(batch)
    return list(zip(*([t.numpy() for t in strategy.experimental_local_results(v)] for v in values)))


def main(framework: str, strategy: str, config_json: str, out: str) -> None:
    config = RunConfig.from_json(config_json)
    os.environ.update(framework_spec(framework).variables_for(config))
    adapter = create_adapter(framework, strategy)
    adapter.setup(config)
    arrays = {"steps": np.array(adapter.steps_per_epoch())}
    for epoch in EPOCHS:
        for step, batch in enumerate(adapter.epoch_batches(epoch)):
            for device, (images, labels) in enumerate(per_device(framework, adapter, batch)):
                arrays[f"{epoch}-{step}-{device}-images"] = images
                arrays[f"{epoch}-{step}-{device}-labels"] = labels
        if framework == "keras-jax":
            rank1 = Shard.of_rank(1, 2, config.global_batch)
            for step, (pixels, labels) in enumerate(adapter.real.train(rank1, epoch)):
                arrays[f"rank1-{epoch}-{step}-pixels"] = pixels
                arrays[f"rank1-{epoch}-{step}-labels"] = labels
    np.savez(out, **arrays)


if __name__ == "__main__":
    main(*sys.argv[1:5])
