"""A language model's rows in the reports that once assumed images and AUC: its caveats, time-to-train
table and chart, training curves, diff refusal and projection name tokens, its sequence length
and its objective's metrics, each read in its own direction; image reports say what they said."""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

import pytest
from conftest import append_result, one_line_error
from test_diff import rewritten

from mgbench.cli import main
from mgbench.core.config import RunConfig
from mgbench.measure.timing import summarise_steps
from mgbench.projection.calibration import assumptions, epoch_text
from mgbench.records.results import RunResult
from mgbench.reports.summary import results_frame
from mgbench.reports.training import metric_columns, time_to_train_chart, training_table

SEQ_LEN = 32


def lm_epochs_row(devices: int, loss: float, steps: int = 60, **figures) -> RunResult:
    """gpt2-tiny at 32 tokens trained 2 epochs on `devices` CPUs, its held-out loss `loss`."""
    config = RunConfig.flat(
        "pytorch", "ddp", "gpt2-tiny", devices, "cpu", 8, 20, seq_len=SEQ_LEN, epochs=2, dataset="tokens:/data"
    )
    stats = summarise_steps([0.05] * steps, [0.0] * steps, config.global_batch)
    values = {"time_to_train_seconds": 100.0, "compile_seconds": None, "eval_seconds": 5.0, **figures}
    epochs = [
        {"epoch": 1, "val_loss": loss + 0.5, "val_perplexity": 2.0},
        {"epoch": 2, "val_loss": loss, "val_perplexity": 1.5},
    ]
    metrics = {"loss": loss, "perplexity": 2.0}
    return RunResult.flat(config, "ok", **vars(stats), test_metrics=metrics, epoch_metrics=epochs, **values)


def test_a_language_models_caveats_name_tokens_and_a_loss_that_rises_is_far_worse():
    """Its held-out loss 4.5 on 2 devices against 4.0 on 1: worse, since a loss falls as the
    model learns; the same loss lower on 2 devices is no caveat. Too few steps: train more tokens."""
    frame = results_frame([lm_epochs_row(1, 4.0), lm_epochs_row(2, 4.5)])
    assert frame.set_index("devices").loc[2, "warning"] == (
        "test loss 4.500, far above the 4.000 of the same job on 1 device(s)"
    )
    assert list(results_frame([lm_epochs_row(1, 4.5), lm_epochs_row(2, 4.0)])["warning"]) == ["", ""]
    short = lm_epochs_row(2, 4.0, steps=20)
    short = dataclasses.replace(short, timing=dataclasses.replace(short.timing, steady_steps=9))
    caveats = results_frame([lm_epochs_row(1, 4.0), short]).set_index("devices").loc[2, "caveats"]
    assert [caveat.remedy for caveat in caveats] == ["train more tokens or more epochs"]
    assert "AUC" not in " ".join(caveat.text for caveat in caveats)


def test_a_language_models_time_to_train_table_and_chart_show_its_loss(tmp_path, monkeypatch):
    frame = results_frame([lm_epochs_row(1, 4.0), lm_epochs_row(2, 4.5)])
    assert metric_columns(frame) == {"val_loss": "val loss", "test_loss": "test loss"}
    table = training_table(frame)
    assert list(table.columns[-2:]) == ["val_loss", "test_loss"]
    assert list(table["test_loss"]) == [4.0, 4.5] and list(table["val_loss"]) == [4.0, 4.5]
    figures = []
    monkeypatch.setattr("mgbench.reports.training.save", lambda figure, path: figures.append(figure) or path)
    time_to_train_chart(table, tmp_path / "time-to-train.png", frame)
    axes = figures[0].axes[0]
    assert axes.get_title().startswith("Time to train and test loss: ")
    notes = [text.get_text() for text in axes.texts]
    assert notes == ["100.0 s, test loss 4.000", "100.0 s, test loss 4.500"]


def test_a_language_models_training_curves_plot_its_validation_perplexity(tmp_path, monkeypatch):
    from mgbench.reports.compare_charts import epoch_chart

    figures = []
    monkeypatch.setattr("mgbench.reports.compare_charts.save", lambda figure, path: figures.append(figure) or path)
    epoch_chart(results_frame([lm_epochs_row(1, 4.0), lm_epochs_row(2, 4.5)]), tmp_path / "epochs.png")
    right = figures[0].axes[1]
    assert right.get_ylabel() == "validation perplexity"
    assert [list(line.get_ydata()) for line in right.get_lines()] == [[2.0, 1.5], [2.0, 1.5]]


@pytest.fixture
def lm_folder(tmp_path):
    folder = tmp_path / "lm"
    for devices in (1, 2):
        append_result(folder / "results.jsonl", lm_epochs_row(devices, 4.0))
    return folder


def test_a_language_models_folders_at_other_sequence_lengths_are_refused_naming_it(lm_folder, tmp_path, capsys):
    other = rewritten(lm_folder, tmp_path / "other", lambda row: {**row, "seq_len": 64})
    code = main(["diff", str(lm_folder), str(other)])
    line = one_line_error(subprocess.CompletedProcess([], code, "", capsys.readouterr().err))
    assert "trained other work, whose tokens/s do not compare: seq len 32 -> 64" in line


def test_a_language_models_projection_counts_its_epoch_in_tokens():
    from mgbench.core.units import rate_unit
    from mgbench.projection.interconnects import parse_interconnect

    target = parse_interconnect("nvlink4", Path("none"), 8, 1)
    tokens = rate_unit("gpt2-tiny", SEQ_LEN)
    assert epoch_text(1000, tokens) == "1,000 samples of 32 tokens (32,000 tokens)"
    assert "epoch of 1,000 samples of 32 tokens (32,000 tokens); " in assumptions(target, 1000, tokens)
    assert "epoch of 1,000 images; " in assumptions(target, 1000)


def test_a_language_models_epochs_are_ranked_by_its_held_out_loss_and_images_by_auc():
    """The time-to-train ranking names the metric the rows are judged by: a language model's loss,
    an image model's AUC (top-1 where class folders give it)."""
    from test_verdict import epochs_row

    from mgbench.reports.ranking import ranking_of

    assert ranking_of(results_frame([lm_epochs_row(1, 4.0), lm_epochs_row(2, 4.5)])).metric == "loss"
    assert ranking_of(results_frame([epochs_row(1, 0.8)])).metric == "auc"
