"""`--epochs` compares answer "how long to train" (or, with `--target-metric`, "how long to a model
this good") with the test metric beside it: the driver stops at the target, the table and verdict
rank by time rather than images/sec, and the console output fits the width it is given."""

from __future__ import annotations

import dataclasses
import io
import math

import numpy as np
import pytest
from rich.console import Console
from test_cli import exit_code
from test_driver import EpochAdapter, fake_config

from mgbench.core.config import RunConfig
from mgbench.core.errors import UsageError
from mgbench.core.target import TargetMetric
from mgbench.records.results import RunResult
from mgbench.training.driver import run_training


class LearningAdapter(EpochAdapter):
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
    adapter = LearningAdapter("steady")
    result = run_training(adapter, config)
    assert adapter.epochs_trained == 1 and adapter.scored == ["val", "test"]
    assert result.by_epoch.target_epoch == 1 and len(result.by_epoch.epoch_metrics) == 1
    assert result.by_epoch.time_to_target_seconds == result.by_epoch.epoch_metrics[0]["elapsed_seconds"] > 0
    assert result.by_epoch.time_to_target_seconds <= result.by_epoch.time_to_train_seconds
    assert result.by_epoch.time_to_target_with_startup_seconds == pytest.approx(
        result.startup_seconds + result.by_epoch.time_to_target_seconds
    )
    assert result.warnings == []


def test_a_target_never_reached_trains_every_epoch_and_says_so(fake_plugin):
    config = fake_config(dataset="chestxray:/data", epochs=2, target_metric="auc=0.95")
    adapter = LearningAdapter("steady")
    result = run_training(adapter, config)
    assert adapter.epochs_trained == 2
    assert result.by_epoch.target_epoch is None and result.by_epoch.time_to_target_seconds is None
    assert result.by_epoch.time_to_train_seconds > 0
    (warning,) = result.warnings
    assert "auc=0.95 not reached in 2 epoch(s)" in warning and "0.8000" in warning


def test_target_metric_without_epochs_is_one_line_and_exit_2(fake_plugin, capsys):
    from mgbench.cli import main

    assert exit_code(main, ["compare", "--frameworks", "fake", "--target-metric", "auc=0.8"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mgbench: error: --target-metric needs --epochs"), lines


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("auc", "NAME=VALUE"),
        ("accuracy=0.3", "NAME=VALUE"),
        ("auc=80", "auc= takes a share above 0 and at most 1, got '80'"),
        ("auc=high", "auc= takes a share"),
        ("top1=0", "top1= takes a share"),
        ("perplexity=1", "perplexity= takes a number above 1, got '1'"),
        ("perplexity=0.5", "perplexity= takes a number above 1"),
        ("loss=0", "loss= takes a number above 0, got '0'"),
        ("loss=-4.5", "loss= takes a number above 0"),
    ],
)
def test_a_target_is_a_level_its_metric_takes(text, says):
    with pytest.raises(UsageError, match="--target-metric") as refused:
        TargetMetric.parse(text)
    assert says in str(refused.value) and "\n" not in str(refused.value)


def test_a_language_model_s_target_is_its_held_out_loss_or_perplexity_reached_from_above():
    loss, perplexity = TargetMetric.parse("loss=4.5"), TargetMetric.parse("perplexity=90")
    assert (loss.value, perplexity.value) == (4.5, 90.0)
    assert loss.reached({"loss": 4.5}) and loss.reached({"loss": 4.2}) and not loss.reached({"loss": 4.6})
    assert perplexity.reached({"perplexity": 89.0}) and not perplexity.reached({"perplexity": 91.0})
    assert TargetMetric.parse("auc=0.5").reached({"auc": 0.6}) and not TargetMetric.parse("auc=0.7").reached(
        {"auc": 0.6}
    )
    assert loss.label == "val loss 4.5" and perplexity.label == "val perplexity 90"


def test_a_target_a_language_model_s_validation_does_not_give_is_refused_in_its_words(tmp_path):
    from test_tokens import write_stream

    from mgbench.core.job import Job
    from mgbench.datasets.resolve import check_dataset

    stream = write_stream(tmp_path / "stream", np.arange(4096) % 500, vocab_size=512)
    job = Job("gpt2-tiny", "cpu", 1, 2, dataset=f"tokens:{stream}", epochs=2, target_metric="auc=0.8")
    with pytest.raises(UsageError, match="auc: the validation of this language model gives loss, perplexity$"):
        check_dataset(job, [])
    for given in ("loss=4.5", "perplexity=90"):
        assert check_dataset(dataclasses.replace(job, target_metric=given), []) is not None


def test_a_loss_target_is_refused_for_an_image_dataset_whose_objective_lists_no_loss(tmp_path):
    from mgbench.core.job import Job
    from mgbench.datasets.resolve import check_dataset
    from mgbench.datasets.sample import make_sample

    make_sample(tmp_path / "xray", 20, 32, seed=1)
    job = Job("densenet121", "cpu", 2, 1, dataset=f"chestxray:{tmp_path / 'xray'}", epochs=2, target_metric="loss=0.2")
    with pytest.raises(UsageError, match="loss: the validation of this multi-label dataset gives auc$"):
        check_dataset(job, [])


class FallingLossAdapter(LearningAdapter):
    """The epoch fake as a language model validates: its held-out loss falls by 0.5 an epoch from
    5.0, and its perplexity is the loss's exp."""

    def evaluate(self, split: str = "val") -> dict[str, float]:
        EpochAdapter.evaluate(self, split)
        loss = 5.0 - 0.5 * self.epochs_trained
        return {"loss": loss, "perplexity": math.exp(loss)}


@pytest.mark.parametrize(("target", "epoch"), [("loss=4", 2), ("perplexity=30", 4)])
def test_a_falling_target_stops_training_at_the_first_epoch_at_or_below_it(fake_plugin, capsys, target, epoch):
    config = fake_config(dataset="chestxray:/data", epochs=5, target_metric=target)
    result = run_training(FallingLossAdapter("steady"), config)
    assert result.by_epoch.target_epoch == epoch and len(result.by_epoch.epoch_metrics) == epoch
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("epoch ")]
    assert lines[-1].endswith(f"target {target} reached") and lines[-1].count("val loss") == 1


def test_a_target_the_datasets_validation_does_not_give_is_refused_before_reading_images(tmp_path):
    from mgbench.core.job import Job
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
    assert RunConfig.from_dict(data).job.target_metric is None


EPOCH_LINES = {
    # (framework, strategy): (images/sec, seconds to train, seconds to the target or None, test AUC)
    ("keras-jax", "jax-shard-map"): (900.0, 30.0, None, 0.58),
    ("pytorch", "ddp"): (600.0, 19.4, 12.0, 0.601),
    ("horovod", "horovod"): (500.0, 22.1, 15.0, 0.595),
}
"""keras-jax has the most images/sec but trains slowest and never reaches the target."""


def epoch_rows(target: str | None = None) -> list[RunResult]:
    from mgbench.measure.timing import summarise_steps

    rows = []
    for (framework, strategy), (rate, seconds, to_target, auc) in EPOCH_LINES.items():
        config = RunConfig.flat(
            framework, strategy, "densenet121", 1, "cuda", 32, 20, dataset="chestxray:/data", epochs=2,
            target_metric=target,
        )  # fmt: skip
        stats = summarise_steps([config.global_batch / rate] * 40, [0.0] * 40, config.global_batch)
        reached = target is not None and to_target is not None
        rows.append(
            RunResult.flat(
                config,
                "ok",
                **vars(stats),
                time_to_train_seconds=seconds,
                time_to_target_seconds=to_target if reached else None,
                target_epoch=1 if reached else None,
                test_metrics={"loss": 0.5, "auc": auc},
                warnings=[] if reached or target is None else [f"target {target} not reached in 2 epoch(s)"],
            )
        )
    return rows


def steps_rows() -> list[RunResult]:
    """The same lines timed by `--steps` on synthetic data: nothing trained in epochs."""
    return [
        dataclasses.replace(row, config=row.config.with_changes(epochs=None, dataset="synthetic"))
        for row in epoch_rows()
    ]


def summary_of(target: str | None = None):
    from mgbench.reports.compact import compact_summary
    from mgbench.reports.summary import results_frame

    return compact_summary(results_frame(epoch_rows(target)), "densenet121 fp32, chestxray, 2 epochs")


def table_text(summary, width: int) -> str:
    from mgbench.reports.compact import print_compact

    buffer = io.StringIO()
    print_compact(summary, Console(file=buffer, width=width, color_system=None))
    return buffer.getvalue()


def test_an_epochs_compare_ranks_by_time_to_train_not_samples_per_sec():
    from mgbench.reports.verdict import verdict

    summary = summary_of()
    assert list(summary.lines["framework"]) == ["pytorch", "horovod", "keras-jax"]
    assert verdict(summary).startswith(
        "pytorch ddp trained 2 epochs fastest on 1 GPU: 19.40 s [19.21-19.59] (test AUC 0.601), 1.14x horovod horovod;"
    )
    lines = [line for line in table_text(summary, 120).splitlines() if "ddp" in line or "horovod " in line]
    assert "pytorch" in lines[0] and "19.40" in lines[0] and "0.601" in lines[0] and "600.0" in lines[0]


def test_with_a_target_lines_rank_by_time_to_it_and_those_that_missed_it_come_last():
    from mgbench.reports.verdict import verdict

    summary = summary_of("auc=0.6")
    assert list(summary.lines["framework"]) == ["pytorch", "horovod", "keras-jax"]
    assert verdict(summary).startswith(
        "pytorch ddp reached val AUC 0.6 fastest on 1 GPU: 12.00 s [11.88-12.12] (epoch 1 of 2, test AUC 0.601), "
        "1.25x horovod"
    )
    text = table_text(summary, 120)
    (missed,) = [line for line in text.splitlines() if "keras-jax" in line and "│" in line]
    assert "not reached" in missed
    assert any("target auc=0.6 not reached" in line for line in text.splitlines() if line.startswith("["))


def test_summary_md_carries_time_to_train_and_test_auc_of_epochs_rows_only(tmp_path):
    from mgbench.reports.summary import display_table, results_frame

    table = display_table(results_frame(epoch_rows("auc=0.6")))
    assert {"train s", "to target s", "target epoch", "test AUC"} <= set(table.columns)
    assert "test top1" not in table.columns
    pytorch = table[table["framework"] == "pytorch"].iloc[0]
    assert (pytorch["train s"], pytorch["to target s"], pytorch["test AUC"]) == ("19.40", "12.00", "0.601")
    assert table[table["framework"] == "keras-jax"].iloc[0]["to target s"] == "not reached"
    assert not {"train s", "test AUC"} & set(display_table(results_frame(steps_rows())).columns)


def test_piped_output_fits_its_table_to_the_width_columns_gives_and_leaves_sentences_whole(monkeypatch, capsys):
    """The table fits COLUMNS; a note and the verdict are one line each, however long, for the
    terminal to wrap and a search of the output to find whole."""
    from mgbench.reports.compact import print_summary
    from mgbench.reports.summary import results_frame

    monkeypatch.setenv("COLUMNS", "100")
    rows = epoch_rows("auc=0.6")
    rows[0].warnings = [("a warning long enough to need wrapping at one hundred columns " * 3).strip()]
    print_summary(results_frame(rows), "densenet121 fp32, chestxray, 2 epochs, weak scaling, cuda")
    lines = capsys.readouterr().out.splitlines()
    table = lines[1 : next(i for i, line in enumerate(lines) if line.startswith("[1]"))]
    assert max(len(line) for line in table) <= 100
    assert any(line.startswith("[") and line.endswith(rows[0].warnings[0]) for line in lines)
    verdict = next(line for line in lines if line.startswith("pytorch ddp reached val AUC 0.6 fastest"))
    assert len(verdict) > 100 and verdict.endswith(".")


def test_a_steps_compare_still_ranks_by_samples_per_sec():
    from mgbench.reports.compact import compact_summary
    from mgbench.reports.summary import results_frame
    from mgbench.reports.verdict import verdict

    summary = compact_summary(results_frame(steps_rows()))
    assert list(summary.lines["framework"]) == ["keras-jax", "pytorch", "horovod"]
    assert verdict(summary).startswith(
        "keras-jax jax-shard-map is fastest on 1 GPU: 900.0 img/s [891.0-909.0], 1.50x pytorch ddp"
    )
