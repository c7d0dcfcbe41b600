"""The common driver on the fake adapter: timing, warm-up, input wait and the result row."""

import numpy as np
import pytest

from mgbench.common.config import RunConfig
from mgbench.common.driver import run_training
from mgbench.common.protocol import Adapter
from mgbench.common.timing import detect_warmup


def fake_config(**changes):
    base = dict(
        framework="fake", strategy="steady", model="tiny", devices=2, device_kind="cpu", batch_per_device=8, steps=30
    )
    return RunConfig(**{**base, **changes})


def test_fake_trainer_is_an_adapter(fake_plugin):
    import fakefw

    assert isinstance(fakefw.create_trainer("steady"), Adapter)


def test_driver_measures_warmup_input_wait_and_throughput(fake_plugin, tmp_path):
    import fakefw

    config = fake_config()
    result = run_training(fakefw.create_trainer("steady"), config, tmp_path / "state.npz")
    assert result.status == "ok"
    assert len(result.step_seconds) == len(result.input_wait_seconds) == len(result.losses) == 30
    # The fake's slow first steps are left out of the steady state. Exactly where warm-up ends
    # on a given series is `detect_warmup`'s (test_timing); here the series is real time on a
    # shared machine, where a stall of the OS may lengthen a few more steps, which the detector
    # then rightly leaves out too.
    assert result.warmup_detected and fakefw.WARMUP_STEPS <= result.warmup_steps <= config.steps // 2
    assert result.warmup_steps == detect_warmup(result.step_seconds).steps
    expected_step = fakefw.STEP_SECONDS + fakefw.INPUT_SECONDS
    assert result.median_step_seconds == pytest.approx(expected_step, rel=0.3)
    assert result.images_per_sec == pytest.approx(config.global_batch / result.median_step_seconds)
    assert result.input_wait_fraction == pytest.approx(fakefw.INPUT_SECONDS / expected_step, rel=0.4)
    assert all(w < s for w, s in zip(result.input_wait_seconds, result.step_seconds))
    assert result.startup_seconds > 0 and result.eval_metrics == {"loss": 0.5}
    assert result.parameters == 1234 and result.framework_versions == {"fake": "1.0"}
    assert result.loader_workers is None
    assert np.load(tmp_path / "state.npz")["steps"][0] == 30


def test_crash_inside_a_step_propagates(fake_plugin):
    import fakefw

    with pytest.raises(RuntimeError, match="on purpose"):
        run_training(fakefw.create_trainer("crash"), fake_config(strategy="crash"))
