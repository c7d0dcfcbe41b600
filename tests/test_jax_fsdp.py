"""keras-jax's `jax-fsdp`: every large weight and its optimizer slots sharded along the batch's axis
(keras.distribution.ModelParallel), on 2 JAX host devices.

As every data-parallel strategy: one step on 2 devices with global batch B leaves the weights of
1 device on B. Beside that, what makes it a sharded strategy: the large weights and their slots
are split over the devices (each holds half of them), the small ones replicated.
"""

import json
import os
import subprocess

import pytest
from conftest import TESTS, framework_python, mgbench, read_rows, run_in, tiny_job

from mgbench.core.collectives import CollectiveKind, Sharding
from mgbench.frameworks.registry import framework_spec

TOLERANCE = 1e-5
LEARNING_RATES = {"tiny": 0.5, "gpt2-tiny": 1e-3}
"""A rate per model that moves its weights well past TOLERANCE in one step (gpt2-tiny's AdamW
moves each weight by about the rate)."""


def probe(model: str) -> dict:
    """What `keras_jax_fsdp_probe.py` finds for `model` (one jax-fsdp step on 1 and on 2 devices)."""
    if model not in framework_spec("keras-jax").capabilities.builders.models:
        pytest.skip(f"keras-jax does not build {model} yet")
    python = framework_python("keras-jax")
    env = dict(
        os.environ,
        KERAS_BACKEND="jax",
        JAX_PLATFORMS="cpu",
        PYTHONPATH=str(TESTS.parent),
        XLA_FLAGS="--xla_force_host_platform_device_count=2",
    )
    done = subprocess.run(
        [python, str(TESTS / "keras_jax_fsdp_probe.py"), model, str(LEARNING_RATES[model])],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module", params=["tiny", pytest.param("gpt2-tiny", marks=pytest.mark.slow)])
def found(request) -> dict:
    return probe(request.param)


def split(variable: dict) -> bool:
    return "batch" in variable["spec"]


def test_two_devices_leave_the_weights_of_one_on_the_same_global_batch(found):
    assert found["difference"] < TOLERANCE < found["moved"]


def test_large_weights_are_split_along_the_batch_axis_and_small_ones_kept_whole(found):
    weights = found["weights"]
    assert any(split(weight) for weight in weights.values()), "no weight is sharded"
    for path, weight in weights.items():
        assert weight["spec"].count("batch") == (weight["size"] >= found["sharded_from"]), path
    assert any(weight["size"] < found["sharded_from"] for weight in weights.values())


def slots_of(path: str, slots: dict) -> list[dict]:
    """The optimizer's slots of the weight at `path`: Keras names each after the weight and its
    kind ("h_0_attn/c_attn/kernel" -> "adam_w/h_0_attn_c_attn_kernel_momentum")."""
    flat = f"{path.replace('/', '_')}_"
    owned = (name.split("/", 1)[1] for name in slots)
    return [
        slot
        for name, slot in zip(owned, slots.values())
        if name.startswith(flat) and "_" not in name.removeprefix(flat)
    ]


def test_each_weights_optimizer_slots_are_split_as_it_is(found):
    for path, weight in found["weights"].items():
        slots = slots_of(path, found["slots"])
        assert slots and all(slot["spec"] == weight["spec"] for slot in slots), path


def test_each_device_holds_half_of_every_sharded_variable_and_all_of_the_rest(found):
    """The point of the strategy: per device, the state shrinks by half of what is sharded."""
    variables = [*found["weights"].values(), *found["slots"].values()]
    whole = sum(variable["bytes"] for variable in variables)
    expected = sum(variable["bytes"] // 2 if split(variable) else variable["bytes"] for variable in variables)
    assert found["per_device_bytes"] == expected < whole


def test_the_layout_rule_splits_the_largest_even_dimension_of_large_variables():
    python = framework_python("keras-jax")
    rules = json.loads(
        run_in(
            python,
            """
import json, os
os.environ["KERAS_BACKEND"] = "jax"
os.environ["JAX_PLATFORMS"] = "cpu"
from mgbench.frameworks.keras_jax.strategies import data_axis_spec
shapes = [(3, 3, 16, 32), (50257, 768), (768, 3072), (4096,), (768,), (32, 10), (4097, 3)]
print(json.dumps({"two": [data_axis_spec(s, 2) for s in shapes], "one": data_axis_spec((768, 3072), 1),
                  "three": data_axis_spec((3, 3, 64, 64), 3)}))
""",
        )
        .strip()
        .splitlines()[-1]
    )
    assert rules["two"] == [
        [None, None, None, "batch"],  # a convolution: its output channels
        [None, "batch"],  # GPT-2's embedding: its vocabulary is odd, so its width
        [None, "batch"],  # a matrix: its wider side
        ["batch"],  # a vector as large as the smallest sharded matrix
        None,  # a norm's scale
        None,  # too small to be worth a gather
        None,  # no dimension splits evenly
    ]
    assert rules["one"] is None
    assert rules["three"] == ["batch", None, None, None]  # the only dimension 3 divides


def test_jax_fsdp_declares_its_weights_gathered_and_gradients_reduce_scattered():
    strategy = framework_spec("keras-jax").strategy("jax-fsdp")
    communication = strategy.communication
    assert communication.shards is Sharding.PARAMETERS
    assert [c.kind for c in communication.collectives] == [CollectiveKind.ALL_GATHER, CollectiveKind.REDUCE_SCATTER]
    # A gather and a reduce-scatter of the whole model move what an all-reduce of it does.
    all_reduce = framework_spec("keras-jax").strategy("jax-dp").communication
    assert communication.bus_bytes(1e9, 4) == pytest.approx(all_reduce.bus_bytes(1e9, 4)) == 1.5e9


def test_mgbench_run_gives_an_ok_jax_fsdp_row_on_two_cpu_devices(tmp_path):
    framework_python("keras-jax")
    out = tmp_path / "run"
    done = mgbench(
        "run", "--framework", "keras-jax", "--strategy", "jax-fsdp", "--gpus", "2", *tiny_job(2, device="cpu"),
        "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    (row,) = read_rows(out).itertuples()
    assert row.status == "ok" and row.strategy == "jax-fsdp" and row.devices == 2
    assert len(row.losses) == 2 and row.peak_memory_bytes > 0
