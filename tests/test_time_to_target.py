"""`--epochs` compares answer "how long to train" (or, with `--target-metric`, "how long to a model
this good") with the test metric beside it: the driver stops at the target, the table and verdict
rank by time rather than images/sec, and the console output fits the width it is given."""

from __future__ import annotations

import pytest
from test_cli import exit_code
from test_driver import EpochTrainer, fake_config

from mgbench.common.config import RunConfig
from mgbench.common.driver import run_training
from mgbench.common.errors import UsageError
from mgbench.common.target import TargetMetric


class LearningTrainer(EpochTrainer):
    """The epoch fake whose validation AUC climbs by 0.1 an epoch from 0.6, counting epochs trained."""

    def __init__(self, strategy: str):
        super().__init__(strategy)
        self.epochs_trained = 0

    def epoch_batches(self, epoch: int):
        self.epochs_trained += 1
        return super().epoch_batches(epoch)

    def evaluate(self, split: str = "val") -> dict[str, float]:
        super().evaluate(split)
        return {"loss": 0.3, "auc": 0.6 + 0.1 * self.epochs_trained}


def test_a_target_reached_in_the_first_epoch_stops_training_there(fake_plugin):
    config = fake_config(dataset="chestxray:/data", epochs=3, target_metric="auc=0.7")
    trainer = LearningTrainer("steady")
    result = run_training(trainer, config)
    assert trainer.epochs_trained == 1 and trainer.scored == ["val", "test"]
    assert result.target_epoch == 1 and len(result.epoch_metrics) == 1
    assert result.time_to_target_seconds == result.time_to_train_seconds > 0
    assert result.time_to_target_with_startup_seconds == pytest.approx(
        result.startup_seconds + result.time_to_target_seconds
    )
    assert result.warnings == []


def test_a_target_never_reached_trains_every_epoch_and_says_so(fake_plugin):
    config = fake_config(dataset="chestxray:/data", epochs=2, target_metric="auc=0.95")
    trainer = LearningTrainer("steady")
    result = run_training(trainer, config)
    assert trainer.epochs_trained == 2
    assert result.target_epoch is None and result.time_to_target_seconds is None
    assert result.time_to_train_seconds > 0
    (warning,) = result.warnings
    assert "auc=0.95 not reached in 2 epoch(s)" in warning and "0.8000" in warning


def test_target_metric_without_epochs_is_one_line_and_exit_2(fake_plugin, capsys):
    from mgbench.cli import main

    assert exit_code(main, ["compare", "--frameworks", "fake", "--target-metric", "auc=0.8"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mgbench: error: --target-metric needs --epochs"), lines


@pytest.mark.parametrize("text", ["auc", "loss=0.3", "auc=80", "auc=high", "top1=0"])
def test_a_target_is_a_rising_metric_at_a_share(text):
    with pytest.raises(UsageError, match="--target-metric"):
        TargetMetric.parse(text)


def test_a_target_the_datasets_validation_does_not_give_is_refused_before_reading_images(tmp_path):
    from mgbench.common.job import Job
    from mgbench.datasets.resolve import check_dataset
    from mgbench.datasets.sample import make_sample

    make_sample(tmp_path / "xray", 20, 32, seed=1)
    job = Job("densenet121", "cpu", 2, 1, dataset=f"chestxray:{tmp_path / 'xray'}", epochs=2, target_metric="top1=0.5")
    with pytest.raises(UsageError, match="top1: the validation of this multi-label dataset gives auc"):
        check_dataset(job, [])
    assert TargetMetric.parse("top1=0.5").reached({"auc": 0.9, "top1": 0.5})


def test_old_configs_without_a_target_read_back_as_none():
    config = fake_config()
    data = config.to_dict()
    del data["target_metric"]
    assert RunConfig.from_dict(data).target_metric is None
