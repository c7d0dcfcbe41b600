"""Keras 3 adapters, run through the CLI in their own environments (.venvs/keras-tf, keras-jax).

Data parallelism is checked on CPU devices: TensorFlow splits the CPU into 2 logical devices,
JAX gets 2 host devices (XLA_FLAGS). Two steps on 2 devices with global batch B must leave the
same weights as 2 steps on 1 device with B, far closer than the steps moved them. Two steps,
because the pool cycles two different batches: a pipeline delivering them out of order fails.
"""

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import (
    assert_compiled_equals_eager,
    framework_python,
    max_difference,
    profiled_two_cpu_compare,
    run_in,
    run_row,
    saved_state,
)

from mgbench.core.config import RunConfig
from mgbench.datasets.synthetic import Shard, synthetic_pool
from mgbench.frameworks.registry import framework_spec
from mgbench.measure.trace_events import xla_device_events

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)
TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return tmp_path_factory.mktemp("keras-runs")


def probe_finding(python: Path | str, script: str, env: dict[str, str], timeout: float) -> dict:
    """Run a probe script of tests/ in a Keras environment: it prints what it found as JSON on its last line,
    after whatever Keras and its backend print."""
    done = subprocess.run(
        [str(python), os.path.join(TESTS, script)], capture_output=True, text=True, env=env, timeout=timeout
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_keras_offsets_are_exactly_torchvisions_inception_gammas():
    """keras.applications' Inception-v3 has batch-norm without scale (gamma): the registry's one
    Keras offset from the catalogue's torchvision counts is exactly the tensors and values of
    torchvision's batch-norm gammas there. The contract test holds every Keras build to these
    counts (ResNet-50, written as torchvision's, with no offset: no convolution bias)."""
    torch = pytest.importorskip("torch")
    torchvision = pytest.importorskip("torchvision")
    with torch.device("meta"):  # shapes only
        inception = torchvision.models.inception_v3(weights=None, aux_logits=False, init_weights=False)
    gammas = [m.weight for m in inception.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    builders = framework_spec("keras-jax").capabilities.builders
    assert builders.parameter_offsets == {"inception_v3": -sum(gamma.numel() for gamma in gammas)}
    assert builders.tensor_offsets == {"inception_v3": -len(gammas)}
    assert all(
        framework_spec(name).capabilities.builders is builders for name in ("keras-tf", "keras-torch", "tensorflow")
    )


def test_staged_unstaged_and_resident_pipelines_deliver_the_same_shards_of_the_same_batches(tmp_path):
    python = framework_python("keras-tf")
    config = RunConfig.flat(
        framework="keras-tf",
        strategy="mirrored",
        model="tiny",
        devices=2,
        device_kind="cpu",
        batch_per_device=3,
        steps=1,
        data_format="channels_last",
    )
    out = tmp_path / "batches.npz"
    env = dict(os.environ, KERAS_BACKEND="tensorflow", PYTHONPATH=ROOT)
    done = subprocess.run(
        [str(python), os.path.join(TESTS, "tf_pipeline_probe.py"), str(out), config.to_json()],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    pool = synthetic_pool(config.job.spec, config.job.input_size, Shard(0, 6), config.job.seed, channels_last=True)
    with np.load(out) as got:
        for draw in range(3):
            images, labels = pool[draw % len(pool)]
            for replica in range(2):
                rows = slice(3 * replica, 3 * replica + 3)
                for pipeline in ("staged", "unstaged", "resident"):
                    np.testing.assert_array_equal(got[f"{pipeline}-{draw}-{replica}-images"], images[rows])
                    np.testing.assert_array_equal(got[f"{pipeline}-{draw}-{replica}-labels"], labels[rows])
                # Staged batches were prefetched into the replica's own device, where
                # `--data-on-device` keeps them.
                for pipeline in ("staged", "resident"):
                    assert str(got[f"{pipeline}-device-{draw}-{replica}-images"]).endswith(f"CPU:{replica}")


@pytest.fixture(scope="module")
def keras_single(runs):
    return saved_state(runs, "keras-tf", "mirrored", 1, 8, 0.5, steps=2, data_format="channels_last")


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["mirrored", "mirrored-unstaged", "central-storage", "central-storage-unstaged"])
def test_two_tf_devices_equal_one_on_the_same_global_batch(runs, keras_single, strategy):
    initial = saved_state(runs, "keras-tf", "mirrored", 1, 8, 0.0, steps=2, data_format="channels_last")
    moved = max_difference(keras_single, initial)
    double = saved_state(runs, "keras-tf", strategy, 2, 4, 0.5, steps=2, data_format="channels_last")
    assert max_difference(keras_single, double) < TOLERANCE < moved


@pytest.mark.slow
def test_keras_jit_compiled_step_trains_as_the_eager_one(runs):
    """Keras' jit_compile=True (XLA) on one device: the step the registry allows it."""
    framework_python("keras-tf")
    row = assert_compiled_equals_eager(runs, "keras-tf", "mirrored", 1, 8, TOLERANCE, data_format="channels_last")
    assert row.compiler == "xla"


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["jax-dp", "jax-dp-on-batch", "jax-shard-map", "jax-shard-map-unstaged"])
def test_two_jax_devices_equal_one_on_the_same_global_batch(runs, strategy):
    single = saved_state(runs, "keras-jax", "jax-dp", 1, 8, 0.5, steps=2, data_format="channels_last")
    initial = saved_state(runs, "keras-jax", "jax-dp", 1, 8, 0.0, steps=2, data_format="channels_last")
    double = saved_state(runs, "keras-jax", strategy, 2, 4, 0.5, steps=2, data_format="channels_last")
    assert max_difference(single, double) < TOLERANCE < max_difference(single, initial)


@pytest.mark.slow
def test_keras_jax_rows_say_its_step_always_compiles(runs):
    """Without --compile too: the row names XLA, and the first step was the compile step."""
    framework_python("keras-jax")
    saved_state(runs, "keras-jax", "jax-dp", 1, 8, 0.5, steps=2, data_format="channels_last")
    row = run_row(runs, "keras-jax", "jax-dp", 1, 8, 0.5, steps=2, data_format="channels_last")
    assert pd.isna(row.compile) and row.compiler == "xla (always)" and row.compile_seconds > 0
    assert len(row.step_seconds) == 2


NCHW_BACKPROP_PROBE = """
import tensorflow as tf
kernel = tf.Variable(tf.ones([3, 3, 3, 4]))
with tf.GradientTape() as tape:
    out = tf.nn.conv2d(tf.ones([1, 3, 8, 8]), kernel, 1, "SAME", data_format="NCHW")
tape.gradient(out, kernel)
"""


def tensorflow_cpu_trains_channels_first() -> bool:
    """TensorFlow's own CPU kernels take no NCHW convolution backward; its oneDNN kernels do, and
    TF uses them by default only on CPUs with AVX-512 features. On other hosts a channels_first
    Keras-over-TF run on CPU devices fails in TF, not in mgbench."""
    python = framework_python("keras-tf")
    probe = subprocess.run([python, "-c", NCHW_BACKPROP_PROBE], capture_output=True, text=True, timeout=300)
    return probe.returncode == 0


@pytest.mark.slow
@pytest.mark.parametrize("framework, strategy", [("keras-tf", "mirrored"), ("keras-jax", "jax-dp")])
def test_bf16_channels_first_trains_on_two_devices(runs, framework, strategy):
    if framework == "keras-tf" and not tensorflow_cpu_trains_channels_first():
        pytest.skip("TensorFlow on this CPU has no NCHW convolution backward (oneDNN off: no AVX-512)")
    initial = saved_state(runs, framework, strategy, 2, 4, 0.0, data_format="channels_first", precision="bf16", steps=2)
    trained = saved_state(runs, framework, strategy, 2, 4, 0.5, data_format="channels_first", precision="bf16", steps=2)
    assert all(np.isfinite(v).all() for v in trained.values())
    assert max_difference(trained, initial) > 1e-3


@pytest.mark.slow
def test_jax_dp_normalises_over_the_global_batch_and_shard_map_over_each_device():
    """With batch-norm the split of the batch matters: one step on the whole batch differs from
    the mean of steps on its halves. Keras' DataParallel (jax-dp) computes the statistics over
    the global batch, so its 2-device step equals the 1-device step on the whole batch;
    jax-shard-map normalises each device's shard and averages the gradients, as DDP does, so it
    equals the mean of the halves' steps. Differences are in units of the split's own effect
    (the step on the first convolution is large here: fresh batch-norms over 4 images)."""
    python = framework_python("keras-jax")
    env = dict(
        os.environ,
        KERAS_BACKEND="jax",
        JAX_PLATFORMS="cpu",
        PYTHONPATH=ROOT,
        XLA_FLAGS="--xla_force_host_platform_device_count=2",
    )
    found = probe_finding(python, "keras_jax_batchnorm_probe.py", env, timeout=900)
    split_effect = found["whole_vs_mean_of_halves"]
    assert split_effect > 0.1
    assert found["jax-dp_vs_whole"] < split_effect / 20
    assert found["jax-shard-map_vs_mean_of_halves"] < split_effect * 1e-4


@pytest.mark.slow
def test_keras_jax_profile_reads_every_devices_ops_from_the_jax_trace(tmp_path):
    framework_python("keras-jax")
    out = tmp_path / "prof"
    rows = profiled_two_cpu_compare(out, "keras-jax", "jax-shard-map")
    profile = rows.loc[2, "profile"]
    assert profile["steps"] == 2 and profile["clock"] == "cpu"
    trace = json.loads(Path(profile["trace"]).read_text())
    assert sorted(xla_device_events(trace)) == ["cpu:0", "cpu:1"]
    # One combined gradient all-reduce per step on each device.
    all_reduce = {op["name"]: op for op in profile["top_ops"]}["all-reduce"]
    assert all_reduce["calls"] == 2 * 2
    assert profile["communication_seconds"] >= all_reduce["self_seconds"] > 0
    # The breakdown reads both devices' XLA ops inside the steps jax.profiler marked.
    assert rows.loc[2, "breakdown_clock"] == "cpu" and sum(rows.loc[2, "breakdown"].values()) == pytest.approx(1)
    kept = json.loads((out / "profiles" / "keras-jax-jax-shard-map-2cpu" / "rank0-breakdown.json").read_text())
    assert kept["window_source"] == "step marks" and len(kept["step_spans"]) == 2
    assert sorted(kept["devices"]) == ["cpu:0", "cpu:1"]
    assert all(device["seconds"]["communication"] > 0 for device in kept["devices"].values())


def test_packed_state_holds_one_array_per_dtype_and_unpacks_exactly():
    python = framework_python("keras-jax")
    found = json.loads(
        run_in(
            python,
            """
import json, os
os.environ["JAX_PLATFORMS"] = "cpu"
import jax, jax.numpy as jnp, numpy as np
from mgbench.frameworks.keras_jax.packed_state import PackedTree
rng = np.random.default_rng(0)
tree = ([rng.normal(size=(3, 2, 4)).astype(np.float32), np.float32(2.5)],
        {"count": np.int32(7), "bn": [rng.normal(size=5).astype(np.float32)]},
        [rng.normal(size=(2, 3)).astype(jnp.bfloat16)])
packing = PackedTree(tree)
packed = jax.jit(packing.pack)(tree)
back = jax.jit(packing.unpack)(packed)
same = all(np.array_equal(np.asarray(a), np.asarray(b)) and np.asarray(a).dtype == np.asarray(b).dtype
           for a, b in zip(jax.tree.leaves(tree), jax.tree.leaves(back)))
print(json.dumps({"sizes": {k: int(v.size) for k, v in packed.items()}, "same": same,
                  "structure": jax.tree.structure(back) == jax.tree.structure(tree)}))
""",
        )
        .strip()
        .splitlines()[-1]
    )
    assert found["sizes"] == {"float32": 24 + 1 + 5, "int32": 1, "bfloat16": 6}
    assert found["same"] and found["structure"]


SGD_PROBE = """
import json, os, sys
os.environ["KERAS_BACKEND"] = sys.argv[3]
import numpy as np
import keras
from mgbench.frameworks.keras.models import TorchFormSGD

rates, gradients = json.loads(sys.argv[1]), np.array(json.loads(sys.argv[2]), dtype="float32")
result = {}
for name, optimizer in (("torch_form", TorchFormSGD(momentum=0.9)), ("keras", keras.optimizers.SGD(momentum=0.9))):
    weights = keras.Variable(np.ones(3, dtype="float32"))
    steps = []
    for rate, gradient in zip(rates, gradients):
        optimizer.learning_rate = rate
        optimizer.apply([keras.ops.convert_to_tensor(gradient)], [weights])
        steps.append(np.asarray(keras.ops.convert_to_numpy(weights.value)).tolist())
    result[name] = steps
print(json.dumps(result))
"""


@pytest.mark.parametrize(
    ("framework", "backend"), [("keras-tf", "tensorflow"), ("keras-jax", "jax"), ("keras-torch", "torch")]
)
def test_keras_sgd_steps_in_torchs_form_when_the_rate_changes(framework, backend):
    """b = m b + g; w -= lr b, step after step, under a rate that changes every step (the job's
    warm-up): Keras' own form (v = m v - lr g) steps elsewhere, so its runs would drift."""
    rates = [0.1, 0.05, 0.02, 0.01]
    gradients = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    arguments = (json.dumps(rates), json.dumps(gradients.tolist()), backend)
    found = json.loads(run_in(framework_python(framework), SGD_PROBE, *arguments))
    weights, buffer, expected = np.ones(3, np.float32), np.zeros(3, np.float32), []
    for rate, gradient in zip(rates, gradients):
        buffer = 0.9 * buffer + gradient
        weights = weights - rate * buffer
        expected.append(weights.copy())
    np.testing.assert_allclose(found["torch_form"], expected, rtol=1e-6)
    assert np.abs(np.array(found["keras"]) - np.array(expected)).max() > 1e-2
