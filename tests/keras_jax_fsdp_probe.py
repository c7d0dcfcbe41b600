"""Run inside the keras-jax environment (2 host devices) by tests/test_jax_fsdp.py: one jax-fsdp
step of a model on 1 device and on 2, on the same global batch, from the same start.

Prints JSON on its last line:
- `moved`: the largest change one step made to a trainable weight on 1 device;
- `difference`: the largest difference between the 1- and 2-device weights after the step;
- `weights`, `slots`: the trainable and the optimizer's variables on 2 devices, by path: the axis
  each dimension is split along (`spec`), their elements and bytes;
- `per_device_bytes`: the bytes of those variables the first device holds;
- `sharded_from`: the fewest elements of a variable jax-fsdp shards.

    KERAS_BACKEND=jax XLA_FLAGS=--xla_force_host_platform_device_count=2 JAX_PLATFORMS=cpu \
        python tests/keras_jax_fsdp_probe.py MODEL LEARNING_RATE
"""

import json
import sys

import jax
import keras
import numpy as np

from mgbench.core.config import RunConfig
from mgbench.frameworks.keras_jax.adapter import JaxDataParallelAdapter
from mgbench.frameworks.keras_jax.strategies import SHARDED_FROM_ELEMENTS

GLOBAL_BATCH = 8


def one_step(model: str, devices: int, learning_rate: float) -> dict:
    """The weights before and after one step on `devices` devices, the first batch the adapter
    itself makes (the same global batch whatever the device count), and where the state lies."""
    config = RunConfig.flat(
        framework="keras-jax",
        strategy="jax-fsdp",
        model=model,
        devices=devices,
        device_kind="cpu",
        batch_per_device=GLOBAL_BATCH // devices,
        steps=1,
        learning_rate=learning_rate,
    )
    adapter = JaxDataParallelAdapter("jax-fsdp")
    adapter.setup(config)
    before = [np.asarray(value) for value in adapter.held_state()[0]]
    adapter.train_step(next(adapter.batches()))
    adapter.synchronize()
    trainable, _, slots, _ = adapter.held_state()
    first = jax.devices("cpu")[0]
    found = {
        "before": before,
        "after": [np.asarray(value) for value in trainable],
        "weights": described(adapter.model.trainable_variables, trainable),
        "slots": described(adapter.model.optimizer.variables, slots),
        "per_device_bytes": sum(
            shard.data.nbytes
            for value in [*trainable, *slots]
            for shard in value.addressable_shards
            if shard.device == first
        ),
    }
    adapter.close()
    return found


def described(variables: list[keras.Variable], values: list[jax.Array]) -> dict[str, dict]:
    return {
        v.path: {"spec": partition(value), "size": int(value.size), "bytes": int(value.nbytes)}
        for v, value in zip(variables, values)
    }


def partition(value: jax.Array) -> list[str | None] | None:
    """The axis each dimension of `value` is split along (None: whole), or None where it lies on
    one device (Keras' layout on a mesh of one)."""
    spec = getattr(value.sharding, "spec", None)
    return None if spec is None else [*spec, *[None] * (value.ndim - len(spec))]


def largest_difference(a: list[np.ndarray], b: list[np.ndarray]) -> float:
    return max(float(np.abs(x - y).max()) for x, y in zip(a, b))


def main() -> None:
    model, learning_rate = sys.argv[1], float(sys.argv[2])
    single = one_step(model, 1, learning_rate)
    double = one_step(model, 2, learning_rate)
    print(
        json.dumps(
            {
                "moved": largest_difference(single["after"], single["before"]),
                "difference": largest_difference(single["after"], double["after"]),
                "weights": double["weights"],
                "slots": double["slots"],
                "per_device_bytes": double["per_device_bytes"],
                "sharded_from": SHARDED_FROM_ELEMENTS,
            }
        )
    )


if __name__ == "__main__":
    main()
