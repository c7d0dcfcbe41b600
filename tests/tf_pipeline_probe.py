"""Run inside the keras-tf environment by tests/test_keras.py: what each replica receives.

Writes an .npz with, for the first 3 draws of the staged, the unstaged and the resident
(`--data-on-device`) pipelines over 2 logical CPU devices, every replica's images and labels,
plus the device each staged and resident tensor lives on, so the test (in the orchestrator's environment, without TensorFlow) can compare them
with the synthetic global batches.

    python tests/tf_pipeline_probe.py OUT.npz CONFIG_JSON
"""

import sys

import numpy as np

from mgbench.core.config import RunConfig
from mgbench.frameworks.keras_tf import strategies

DRAWS = 3


def main(out: str, config_json: str) -> None:
    config = RunConfig.from_json(config_json)
    strategy = strategies.strategy_for("mirrored", strategies.device_names(config))
    pool = strategies.global_pool(config)
    staged = strategies.staged_batches(strategy, pool)
    unstaged = strategies.unstaged_batches(pool)
    resident = strategies.resident_batches(strategy, pool)
    arrays = {}
    for draw in range(DRAWS):
        for name, value in (
            ("staged", next(staged)),
            ("unstaged", strategies.split_host_batch(strategy, next(unstaged))),
            ("resident", next(resident)),
        ):
            for part, tensors in zip(("images", "labels"), value):
                for replica, tensor in enumerate(strategy.experimental_local_results(tensors)):
                    arrays[f"{name}-{draw}-{replica}-{part}"] = tensor.numpy()
                    if name != "unstaged":
                        arrays[f"{name}-device-{draw}-{replica}-{part}"] = np.array(tensor.device)
    np.savez(out, **arrays)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
