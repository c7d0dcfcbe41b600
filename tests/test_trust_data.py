"""Nothing silently wrong in what a compare trains and writes: a dataset whose rows, folders or
split lists disagree is refused naming what is at fault, `--resume` checks the images again, a
run named twice runs once, and a metric without a value is null with a warning, never NaN."""

import argparse
import json
import os

import numpy as np
import pytest
from conftest import tiny_job
from fakefw import DIVERGE_STEP
from PIL import Image
from rich.console import Console
from test_datasets import imagefolder, nih_rows, write_nih

from mgbench.cli import main
from mgbench.cli.compare import add_arguments, plan_new, voice
from mgbench.core.config import RunConfig
from mgbench.core.errors import UsageError
from mgbench.core.initial_weights import read_weights_file, reference_weights
from mgbench.core.models import model_spec
from mgbench.datasets.check import time_limit
from mgbench.datasets.resolve import check_dataset, describe_dataset, recheck_dataset
from mgbench.measure.metrics import gathered_metrics
from mgbench.records.compare_plan import ComparePlan
from mgbench.records.results import RunResult, read_results
from mgbench.records.runfolder import RunFolder
from mgbench.reports.summary import results_frame
from mgbench.reports.training import training_table
from mgbench.runner.compare_service import plan_resume

FAKE_JOB = ["--frameworks", "fake", "--gpus", "1", *tiny_job(4)]


def one_line(capsys: pytest.CaptureFixture, args: list[str]) -> str:
    """`mgbench ARGS` in this process exits 2 with one line `mgbench: error: ...`: that line."""
    assert main(args) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mgbench: error: "), lines
    return lines[0]


def refused(dataset: str) -> str:
    with pytest.raises(UsageError) as error:
        describe_dataset(dataset)
    return str(error.value)


def test_two_nih_rows_finding_one_file_are_refused_naming_both_lines(tmp_path):
    write_nih(tmp_path, nih_rows(8))
    with (tmp_path / "Data_Entry_2017.csv").open("a") as labels:
        labels.write("00000002_000.jpg,Hernia,0,99\n")  # finds 00000002_000.png by its stem
    message = refused(f"chestxray:{tmp_path}")
    assert "line 4 (00000002_000.png) and" in message and "line 10 (00000002_000.jpg)" in message
    assert "one image file" in message


def test_a_name_in_two_image_folders_is_refused_and_an_exact_name_is_no_guess(tmp_path):
    write_nih(tmp_path, nih_rows(8))
    other = tmp_path / "images_002"
    other.mkdir()
    (tmp_path / "images" / "00000001_000.png").rename(other / "00000001_000.png")
    assert len(describe_dataset(f"chestxray:{tmp_path}").files) == 8
    (tmp_path / "images" / "00000003_000.jpg").write_bytes((tmp_path / "images" / "00000003_000.png").read_bytes())
    assert len(describe_dataset(f"chestxray:{tmp_path}").files) == 8  # the row names the .png: that one
    (other / "00000005_000.png").write_bytes((tmp_path / "images" / "00000005_000.png").read_bytes())
    message = refused(f"chestxray:{tmp_path}")
    assert "match several files, such as 00000005_000.png" in message
    assert str(tmp_path / "images" / "00000005_000.png") in message and str(other / "00000005_000.png") in message


def test_a_patient_or_an_image_in_both_official_lists_is_refused(tmp_path):
    rows = [(name, findings, str(i // 2)) for i, (name, findings, _) in enumerate(nih_rows(10))]
    write_nih(tmp_path, rows)
    train, test = [r[0] for r in rows[:7]], [r[0] for r in rows[7:]]
    (tmp_path / "train_val_list.txt").write_text("\n".join(train))
    (tmp_path / "test_list.txt").write_text("\n".join(test))
    message = refused(f"chestxray:{tmp_path}")  # patient 3: image 6 trains, image 7 tests
    assert "1 patient(s) with images in both train_val_list.txt and test_list.txt: 3;" in message
    (tmp_path / "train_val_list.txt").write_text("\n".join(train + test[:1]))
    assert "image(s) in both" in refused(f"chestxray:{tmp_path}")
    (tmp_path / "train_val_list.txt").write_text("\n".join(train[:6]))
    (tmp_path / "test_list.txt").write_text("\n".join(train[6:] + test))
    assert len(describe_dataset(f"chestxray:{tmp_path}").test) == 4


def labelled_images(root, count: int = 12) -> list[str]:
    names = [f"{i}.png" for i in range(count)]
    for name in names:
        Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(root / name)
    return names


def test_a_labels_file_listing_an_image_twice_is_refused(tmp_path):
    names = labelled_images(tmp_path)
    rows = "".join(f"{name},{'cat' if i % 2 else 'dog'},train\n" for i, name in enumerate(names))
    (tmp_path / "labels.csv").write_text(f"file,labels,split\n{rows}0.png,cat,test\n")
    message = refused(f"labels:{tmp_path}")
    assert "labels.csv line 2 (0.png), labels.csv line 14 (0.png); list each image once" in message
    mapping = tmp_path / "labels.json"
    mapping.write_text('{"0.png": ["dog"], "1.png": ["cat"], "0.png": ["cat"]}')
    assert "0.png listed twice" in refused(f"labels:{mapping}")


def test_an_empty_labels_cell_is_said_once_and_read_as_negative(tmp_path):
    names = labelled_images(tmp_path)
    rows = "".join(f"{name},{'' if i in (3, 4) else 'cat|dog'}\n" for i, name in enumerate(names))
    (tmp_path / "labels.csv").write_text(f"file,labels\n{rows}")
    said: list[str] = []
    config = RunConfig.flat("fake", "steady", "tiny", 1, "cpu", 1, 1, dataset=f"labels:{tmp_path}")
    check_dataset(config.job, [], workers=1, on_note=said.append)
    assert len(said) == 1 and "2 image(s) without labels, read as negative for every label" in said[0]
    assert "line 5 (3.png), labels.csv line 6 (4.png)" in said[0]


def test_a_class_folder_linked_to_the_dataset_or_a_single_class_is_refused(tmp_path):
    imagefolder(tmp_path, {"ant": 6, "bee": 6})
    (tmp_path / "every").symlink_to(".")
    message = refused(f"imagefolder:{tmp_path}")
    assert "ant/0.png and every/ant/0.png are one image file" in message
    (tmp_path / "every").unlink()
    assert len(describe_dataset(f"imagefolder:{tmp_path}").files) == 12
    imagefolder(tmp_path / "one", {"ant": 6})
    assert "one class folder (ant)" in refused(f"imagefolder:{tmp_path / 'one'}")


def test_an_undefined_auc_is_null_with_a_warning_saying_why_and_survives_a_rewrite():
    one_class = gathered_metrics([(1.2, np.array([[0.2, 0.8], [0.4, 0.6]]), np.array([1, 1]))], multi_label=False)
    no_negative = gathered_metrics([(0.5, np.full((3, 2), 0.5), np.ones((3, 2)))], multi_label=True)
    config = RunConfig.flat("fake", "steady", "tiny", 1, "cpu", 2, 4, dataset="labels:x", epochs=1)
    row = RunResult.flat(
        config,
        "ok",
        samples_per_sec=10.0,
        test_metrics=one_class,
        epoch_metrics=[{"epoch": 1, "val_auc": no_negative["auc"]}],
    )
    text = row.to_json()
    record = json.loads(text, parse_constant=lambda constant: pytest.fail(f"{constant} written"))
    assert record["test_metrics"]["auc"] is None and record["epoch_metrics"][0]["val_auc"] is None
    assert record["test_metrics"]["top1"] == 1.0
    assert record["warnings"] == [
        "epoch_metrics[0].val_auc undefined: no label has both a positive and a negative among the split's 3 images",
        "test_metrics.auc undefined: all 2 images of the split are of one class; AUC needs two",
    ]
    assert RunResult.from_record(record).to_json() == text
    nan_scores = gathered_metrics([(np.nan, np.full((2, 2), np.nan), np.array([0, 1]))], multi_label=False)
    assert nan_scores["auc"].why == "the model's scores are not finite numbers (its loss diverged)"
    diverged = json.loads(RunResult.flat(config, "ok", final_loss=float("nan")).to_json())
    assert diverged["final_loss"] is None and diverged["warnings"] == [
        "final_loss undefined: nan is not a finite number"
    ]


def test_a_row_with_an_undefined_auc_is_tabulated_and_its_warning_shown():
    config = RunConfig.flat("fake", "steady", "tiny", 1, "cpu", 2, 4, dataset="labels:x", epochs=1)
    metrics = gathered_metrics([(1.2, np.array([[0.2, 0.8], [0.4, 0.6]]), np.array([1, 1]))], multi_label=False)
    row = RunResult.from_record(
        json.loads(
            RunResult.flat(
                config,
                "ok",
                samples_per_sec=10.0,
                samples_per_sec_p10=10.0,
                samples_per_sec_p90=10.0,
                warmup_steps=1,
                warmup_detected=True,
                time_to_train_seconds=3.0,
                epoch_metrics=[{"epoch": 1, "samples_per_sec": 10.0, "val_auc": metrics["auc"]}],
                test_metrics=metrics,
            ).to_json()
        )
    )
    frame = results_frame([row])
    assert "test_metrics.auc undefined: all 2 images" in frame.iloc[0]["warning"]
    assert np.isnan(training_table(frame).iloc[0]["test_auc"])


def test_a_framework_or_strategy_named_twice_is_planned_once(tmp_path, fake_plugin):
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    argv = [*FAKE_JOB, "--frameworks", "fake,fake", "--strategies", "steady,steady", "--out", str(tmp_path / "run")]
    args = parser.parse_args(argv)
    args.argv = ["compare", *argv]
    _, plan, runs = plan_new(args, Console(stderr=True))
    assert [run.config.run_id for run in runs] == [config.run_id for config in plan.configs] == ["fake-steady-1cpu"]


def planned(tmp_path, configs: list[RunConfig]) -> RunFolder:
    """A compare folder whose compare.json lists `configs` as they are, repeats included."""
    folder = RunFolder(tmp_path / "run")
    folder.root.mkdir(parents=True)
    record = json.loads(ComparePlan("mgbench compare", configs[:1], 60.0).to_json())
    folder.compare_file.write_text(json.dumps({**record, "configs": [config.to_dict() for config in configs]}))
    return folder


def test_a_plan_listing_one_config_three_times_resumes_to_one_row(tmp_path, fake_plugin):
    steady = RunConfig.flat("fake", "steady", "tiny", 1, "cpu", 2, 4)
    flaky = steady.with_changes(strategy="flaky")
    folder = planned(tmp_path, [steady, steady, flaky, steady, flaky])
    folder.results.write_text(RunResult.flat(steady, "ok", samples_per_sec=10.0).to_json() + "\n")
    plan, book = plan_resume(folder, "mgbench compare --resume run", None, None, voice(Console(stderr=True)))
    assert plan.configs == [steady, flaky] and [run.config for run in book.owed()] == [flaky]
    assert [row.run_id for row in read_results(folder.results)] == ["fake-steady-1cpu"]
    folder = planned(tmp_path / "other", [steady, flaky, steady.with_changes(steps=7)])
    with pytest.raises(UsageError, match="run fake-steady-1cpu is planned twice with different configs"):
        plan_resume(folder, "mgbench compare --resume run", None, None, voice(Console(stderr=True)))


def test_resume_checks_the_images_again_before_launching(tmp_path, fake_plugin, capsys):
    src = tmp_path / "src"
    write_nih(src, nih_rows(20))
    folder = planned(tmp_path, [RunConfig.flat("fake", "steady", "tiny", 1, "cpu", 2, 4, dataset=f"chestxray:{src}")])
    (src / "images" / "00000004_000.png").write_bytes(b"damaged since")
    message = one_line(capsys, ["compare", "--resume", str(folder.root)])
    assert "1 of 20 images cannot be decoded: images/00000004_000.png (not an image" in message
    assert not folder.results.exists() and json.loads(folder.compare_file.read_text()).get("resumed") is None


def test_resume_with_skip_bad_images_refuses_images_damaged_since_the_check(tmp_path):
    src = tmp_path / "src"
    write_nih(src, nih_rows(20))
    (src / "images" / "00000002_000.png").write_bytes(b"bad from the start")
    config = RunConfig.flat("fake", "steady", "tiny", 1, "cpu", 2, 4, dataset=f"chestxray:{src}", skip_bad_images=True)
    recorded = check_dataset(config.job, [config], workers=1)
    recheck_dataset(recorded, [config], workers=1)
    (src / "images" / "00000009_000.png").write_bytes(b"damaged since")
    with pytest.raises(UsageError, match=r"1 image\(s\) cannot be decoded now .*: images/00000009_000.png;"):
        recheck_dataset(recorded, [config], workers=1)


def test_a_diverged_loss_is_a_row_that_says_where_and_every_report_still_comes_out(tmp_path, in_process, capsys):
    """A learning rate too high (or a start holding NaN): the row keeps its throughput and says at
    which step the loss diverged, in one line; the other rows, summary.md, report.html, `report`
    and `run` come out as ever."""
    out = tmp_path / "run"
    assert main(["compare", *FAKE_JOB, "--strategies", "steady,diverge", "--out", str(out)]) == 0, capsys.readouterr()
    rows = {row.config.strategy: row for row in read_results(out / "results.jsonl")}
    diverged, steady = rows["diverge"], rows["steady"]
    assert (diverged.status, diverged.diverged_at_step, steady.diverged_at_step) == ("ok", DIVERGE_STEP, None)
    assert (
        diverged.timing.samples_per_sec > 0
        and diverged.series.losses[: DIVERGE_STEP - 1] == steady.series.losses[: DIVERGE_STEP - 1]
    )
    assert diverged.series.losses[DIVERGE_STEP - 1 :] == [None] * (len(diverged.series.losses) - DIVERGE_STEP + 1)
    why = f"the loss diverged at step {DIVERGE_STEP} (nan)"
    assert diverged.warnings == [f"final_loss, losses[1] and 2 more, step_losses[1] and 2 more undefined: {why}"]
    assert why in capsys.readouterr().out
    assert why in (out / "summary.md").read_text() and why in (out / "report.html").read_text()
    (out / "report.html").unlink()
    assert main(["report", str(out)]) == 0 and (out / "report.html").exists()
    ran = tmp_path / "one"
    assert main(["run", "--framework", "fake", "--strategy", "diverge", *tiny_job(4), "--out", str(ran)]) == 0
    assert why in capsys.readouterr().out


def weights_file(path, value: float) -> str:
    """An `--init` file for the tiny model, every array `value`: its path."""
    arrays = reference_weights(model_spec("tiny"), 0, 32).arrays
    np.savez(path, **{name: np.full_like(array, value) for name, array in arrays.items()})
    return str(path)


def test_resume_refuses_an_init_file_changed_since_the_rows_done(tmp_path, fake_plugin):
    """`--init w.npz`, a row done, w.npz rewritten: the runs to come would start from other
    weights than the row done, so the resume is refused before anything is written."""
    steady = RunConfig.flat(
        "fake", "steady", "tiny", 1, "cpu", 2, 4, image_size=32, init=weights_file(tmp_path / "w.npz", 0.5)
    )
    folder = planned(tmp_path, [steady, steady.with_changes(strategy="flaky")])
    digest = read_weights_file(tmp_path / "w.npz").digest
    folder.results.write_text(RunResult.flat(steady, "ok", samples_per_sec=10.0, init_digest=digest).to_json() + "\n")
    before = folder.compare_file.read_text()
    weights_file(tmp_path / "w.npz", 0.25)
    with pytest.raises(UsageError, match=f"holds other weights now .* than the rows done started from \\({digest}\\)"):
        plan_resume(folder, "mgbench compare --resume run", None, None, voice(Console(stderr=True)))
    assert folder.compare_file.read_text() == before
    weights_file(tmp_path / "w.npz", 0.5)
    book = plan_resume(folder, "resume", None, None, voice(Console(stderr=True)))[1]
    assert [run.config.strategy for run in book.owed()] == ["flaky"]


def test_resume_refuses_an_init_that_names_a_fifo_without_waiting_on_it(tmp_path, fake_plugin):
    os.mkfifo(tmp_path / "w.npz")
    folder = planned(tmp_path, [RunConfig.flat("fake", "steady", "tiny", 1, "cpu", 2, 4, init=str(tmp_path / "w.npz"))])
    with time_limit(30), pytest.raises(UsageError, match="w.npz: not a readable .npz of weights \\(a FIFO, not a"):
        plan_resume(folder, "resume", None, None, voice(Console(stderr=True)))


def test_resume_checks_the_folders_initial_weights_and_writes_them_where_missing(tmp_path, fake_plugin):
    """With `--init same` the folder keeps the draw: one changed since is refused, naming it; one
    missing (a compare stopped before writing it, as on a full disk) is written by the resume."""
    steady = RunConfig.flat("fake", "steady", "tiny", 1, "cpu", 2, 4, image_size=32, init="same")
    folder = planned(tmp_path, [steady, steady.with_changes(strategy="flaky")])
    digest = reference_weights(model_spec("tiny"), 0, 32).digest
    folder.results.write_text(RunResult.flat(steady, "ok", samples_per_sec=10.0, init_digest=digest).to_json() + "\n")
    plan_resume(folder, "resume", None, None, voice(Console(stderr=True)))
    assert read_weights_file(folder.initial_weights).digest == digest
    weights_file(folder.initial_weights, 0.5)
    with pytest.raises(
        UsageError, match=f"initial-weights.npz holds weights .*, not the start the runs take \\({digest}\\)"
    ):
        plan_resume(folder, "resume", None, None, voice(Console(stderr=True)))


def test_a_name_that_is_not_utf8_is_read_and_written_as_the_file_system_holds_it(tmp_path, in_process, capfd):
    """An image named with a byte that is not UTF-8 is split by its bytes (`hashed_split`), and a
    run folder so named gets its logs, rows and report, resumed too."""
    imagefolder(tmp_path / "images", {"ant": 8, "bee": 8})
    odd = os.fsdecode(b"\xff.png")
    (tmp_path / "images" / "ant" / "0.png").rename(tmp_path / "images" / "ant" / odd)
    described = describe_dataset(f"imagefolder:{tmp_path / 'images'}")
    assert len(described.files) == 16 and any(name.endswith(odd) for name in described.files)
    out = tmp_path / os.fsdecode(b"run-\xff")
    assert main(["compare", *FAKE_JOB, "--out", str(out)]) == 0, capfd.readouterr().err
    assert (out / "logs" / "fake-steady-1cpu.log").read_bytes().startswith(b"$ ")
    assert b"run-\xff" in (out / "logs" / "fake-steady-1cpu.log").read_bytes()
    assert main(["compare", "--resume", str(out)]) == 0 and main(["report", str(out)]) == 0
