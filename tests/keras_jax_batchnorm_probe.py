"""Run inside the keras-jax environment (2 host devices) by tests/test_keras.py: what one
ResNet-50 step does to its weights and batch-norm statistics under each way of splitting it.

Prints JSON: the largest difference, over every trainable weight and moving statistic, between
pairs of cases. The cases, all from the same initial weights:
- `half0`, `half1`: one device on one half of the global batch each;
- `whole`: one device on the whole batch (global batch-norm statistics);
- `jax-dp`, `jax-shard-map`: two devices on the whole batch.
With one SGD step from zero momentum the update is -lr * gradient, so a step whose gradient is
the mean of the halves' (DDP's definition) lands on the mean of the halves' weights.

    KERAS_BACKEND=jax XLA_FLAGS=--xla_force_host_platform_device_count=2 JAX_PLATFORMS=cpu \
        python tests/keras_jax_batchnorm_probe.py
"""

import json

import numpy as np

from mgbench.core.config import RunConfig
from mgbench.datasets.synthetic import Shard, synthetic_batch
from mgbench.frameworks.keras_jax.adapter import JaxDataParallelAdapter

PER_DEVICE = 4
IMAGE_SIZE = 64


def one_step(strategy: str, devices: int, images: np.ndarray, labels: np.ndarray) -> list[np.ndarray]:
    """Trainable weights then moving statistics after one step from the seed's initial weights."""
    config = RunConfig.flat(
        framework="keras-jax",
        strategy=strategy,
        model="resnet50",
        devices=devices,
        device_kind="cpu",
        batch_per_device=len(images) // devices,
        steps=1,
        data_format="channels_last",
        image_size=IMAGE_SIZE,
        learning_rate=0.01,
    )
    adapter = JaxDataParallelAdapter(strategy)
    adapter.setup(config)
    adapter.train_step(adapter.shard((images, labels)))
    adapter.synchronize()
    trainable, non_trainable = adapter.held_state()[:2]
    adapter.close()
    return [np.asarray(value) for value in [*trainable, *non_trainable]]


def largest_difference(a: list[np.ndarray], b: list[np.ndarray]) -> float:
    return max(float(np.abs(x - y).max()) for x, y in zip(a, b))


def main() -> None:
    config = RunConfig.flat(
        framework="keras-jax",
        strategy="jax-dp",
        model="resnet50",
        devices=1,
        device_kind="cpu",
        batch_per_device=2 * PER_DEVICE,
        steps=1,
        image_size=IMAGE_SIZE,
    )
    images, labels = synthetic_batch(
        config.job.spec, IMAGE_SIZE, 0, Shard(0, 2 * PER_DEVICE), config.job.seed, channels_last=True
    )
    halves = [slice(0, PER_DEVICE), slice(PER_DEVICE, 2 * PER_DEVICE)]
    found = {
        "half0": one_step("jax-dp", 1, images[halves[0]], labels[halves[0]]),
        "half1": one_step("jax-dp", 1, images[halves[1]], labels[halves[1]]),
        "whole": one_step("jax-dp", 1, images, labels),
        "jax-dp": one_step("jax-dp", 2, images, labels),
        "jax-shard-map": one_step("jax-shard-map", 2, images, labels),
    }
    mean_of_halves = [(a + b) / 2 for a, b in zip(found["half0"], found["half1"])]
    print(
        json.dumps(
            {
                "whole_vs_mean_of_halves": largest_difference(found["whole"], mean_of_halves),
                "jax-dp_vs_whole": largest_difference(found["jax-dp"], found["whole"]),
                "jax-shard-map_vs_mean_of_halves": largest_difference(found["jax-shard-map"], mean_of_halves),
            }
        )
    )


if __name__ == "__main__":
    main()
