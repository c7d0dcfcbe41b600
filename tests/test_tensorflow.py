"""TensorFlow custom loop (tf.function + strategy.run), through the CLI in .venvs/keras-tf.

Its step is written out by hand, so the strongest check is against Keras' own step: same
model, data and optimizer, so after two steps the weights must agree with the keras adapter's,
on 1 device and on 2 logical CPU devices with the same global batch.
"""

import pytest
from conftest import assert_compiled_equals_eager, assert_two_devices_equal_one, max_difference, saved_state

TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return tmp_path_factory.mktemp("tensorflow-runs")


@pytest.mark.slow
def test_custom_loop_on_two_devices_equals_one_device_and_keras(runs):
    single = assert_two_devices_equal_one(
        runs, "tensorflow", "mirrored", TOLERANCE, steps=2, data_format="channels_last"
    )
    keras_step = saved_state(runs, "keras-tf", "mirrored", 1, 8, 0.5, steps=2, data_format="channels_last")
    assert max_difference(single, keras_step) < TOLERANCE


@pytest.mark.slow
def test_xla_compiled_replica_steps_on_two_devices_train_as_the_eager_loop(runs):
    """jit_compile=True around each replica's forward and backward; all-reduce and update outside."""
    row = assert_compiled_equals_eager(runs, "tensorflow", "mirrored", 2, 4, TOLERANCE, data_format="channels_last")
    assert row.compiler == "xla"
