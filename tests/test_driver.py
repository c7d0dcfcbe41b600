"""The common driver on the fake adapter: timing, warm-up, input wait and the result row."""

import time

import fakefw
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


class EpochTrainer(fakefw.FakeTrainer):
    """The fake adapter with a real-data loader's surface: 3 steps per epoch, the held-out
    splits scored apart (each with its own metrics and a known scoring time)."""

    STEPS_PER_EPOCH = 3
    VALIDATION_SECONDS = 0.05

    def steps_per_epoch(self) -> int:
        return self.STEPS_PER_EPOCH

    def epoch_batches(self, epoch: int):
        return iter(range(self.STEPS_PER_EPOCH))

    def set_learning_rate(self, learning_rate: float) -> None:
        self.learning_rate = learning_rate

    def evaluate(self, split: str = "val") -> dict[str, float]:
        self.scored = [*getattr(self, "scored", []), split]
        time.sleep(self.VALIDATION_SECONDS)
        return {"loss": 0.25, "auc": 0.75, "top1": 0.5} if split == "val" else {"loss": 0.3, "auc": 0.8}


def test_epochs_validate_each_epoch_then_test_once_and_time_the_training(fake_plugin):
    config = fake_config(dataset="chestxray:/data", epochs=2, workers=2)
    trainer = EpochTrainer("steady")
    result = run_training(trainer, config, loader="fake.Loader")
    assert trainer.scored == ["val", "val", "test"]
    assert result.test_metrics == {"loss": 0.3, "auc": 0.8}
    assert result.eval_metrics == {"loss": 0.25, "auc": 0.75, "top1": 0.5}
    assert result.loader == "fake.Loader" and result.loader_workers == 2
    assert [row["epoch"] for row in result.epoch_metrics] == [1, 2]
    for row in result.epoch_metrics:
        assert (row["val_loss"], row["val_auc"], row["val_top1"]) == (0.25, 0.75, 0.5)
        assert row["images_per_sec"] == pytest.approx(3 * config.global_batch / row["train_seconds"])
        assert row["val_seconds"] >= EpochTrainer.VALIDATION_SECONDS
    spent = sum(row["train_seconds"] + row["val_seconds"] for row in result.epoch_metrics)
    # from the first step to the end of the last validation, not the test split's scoring after it
    assert spent <= result.time_to_train_seconds < spent + EpochTrainer.VALIDATION_SECONDS
