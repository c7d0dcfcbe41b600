"""Nothing lost, nothing silently wrong: what `prepare`, `make-sample-chestxray` and the dataset
check do with destinations that hold other data, odd pixels, bad input and Ctrl-C."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import psutil
import pytest
from conftest import cli_env, interruptible, mgbench, read_rows, tiny_job
from PIL import Image
from test_datasets import nih_rows, write_nih

from mgbench.cli import main
from mgbench.core.config import RunConfig
from mgbench.core.errors import UsageError
from mgbench.datasets.augment import Augmentation
from mgbench.datasets.chestxray import LABEL_FILE
from mgbench.datasets.images import open_image
from mgbench.datasets.output import MANIFEST
from mgbench.datasets.resolve import check_dataset, dataset_for, describe_dataset


def one_error_line(capsys: pytest.CaptureFixture, args: list[str], message: str) -> None:
    """`mgbench ARGS` exits 2 with one line `mgbench: error: ...` holding `message`."""
    assert main(args) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mgbench: error: ") and message in lines[0], lines


def snapshot(root) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("where", ["src", "src/out", "src/images"])
def test_prepare_refuses_a_destination_that_is_or_is_inside_its_source(tmp_path, capsys, where):
    write_nih(tmp_path / "src", nih_rows(6))
    before = snapshot(tmp_path / "src")
    args = ["prepare", "chestxray", str(tmp_path / "src"), str(tmp_path / where), "--size", "16"]
    for extra in ([], ["--overwrite"]):
        one_error_line(capsys, [*args, *extra], "overlaps the source")
    assert snapshot(tmp_path / "src") == before


def test_prepare_refuses_a_folder_it_did_not_write_even_with_overwrite(tmp_path, capsys):
    write_nih(tmp_path / "src", nih_rows(6))
    (tmp_path / "dst").mkdir()
    (tmp_path / "dst" / "notes.txt").write_text("mine")
    args = ["prepare", "chestxray", str(tmp_path / "src"), str(tmp_path / "dst"), "--size", "16"]
    one_error_line(capsys, args, "not empty")
    one_error_line(capsys, [*args, "--overwrite"], "not written by mgbench")
    assert snapshot(tmp_path / "dst") == {"notes.txt": b"mine"}


def test_prepare_overwrite_replaces_only_its_own_earlier_output(tmp_path, capsys):
    write_nih(tmp_path / "src", nih_rows(6))
    args = ["prepare", "chestxray", str(tmp_path / "src"), str(tmp_path / "dst"), "--size", "16"]
    assert main(args) == 0 and "6 images written" in capsys.readouterr().err
    (tmp_path / "dst" / "notes.txt").write_text("mine")
    one_error_line(capsys, args, "--overwrite")
    theirs = tmp_path / "dst" / "images" / "00000000_000.jpg"  # where the JPEG run will write
    theirs.write_text("mine")
    one_error_line(capsys, [*args, "--format", "jpeg", "--overwrite"], f"{theirs} was not written by mgbench")
    theirs.unlink()
    assert main([*args, "--format", "jpeg", "--overwrite"]) == 0
    images = sorted(p.name for p in (tmp_path / "dst" / "images").iterdir())
    assert images == [f"{i:08d}_000.jpg" for i in range(6)]
    description = describe_dataset(f"chestxray:{tmp_path / 'dst'}")
    assert all(f.endswith(".jpg") for f in description.train.files + description.val.files)
    assert (tmp_path / "dst" / "notes.txt").read_text() == "mine"


def sixteen_bit(path: Path, raw: int, maximum: int) -> None:
    """A 12-bit detector's image stored as a 16-bit PNG: `raw` in its left half, `maximum` in one corner."""
    pixels = np.full((32, 32), raw, np.uint16)
    pixels[:, 16:], pixels[0, 31] = 300, maximum
    Image.fromarray(pixels).save(path)


def test_16_bit_images_of_one_dataset_share_one_scale_in_loaders_and_prepare(tmp_path, capsys):
    src = tmp_path / "src"
    write_nih(src, nih_rows(4), size=32)
    sixteen_bit(src / "images" / "00000000_000.png", 1000, 4095)
    sixteen_bit(src / "images" / "00000001_000.png", 1000, 1500)  # a darker image of the same detector
    rgba = np.zeros((32, 32, 4), np.uint8)
    rgba[..., :3], rgba[:, :16, 3] = 200, 255  # the right half is transparent
    Image.fromarray(rgba, mode="RGBA").save(src / "images" / "00000002_000.png")
    config = RunConfig.flat("pytorch", "ddp", "tiny", 1, "cpu", 1, 1, dataset=f"chestxray:{src}")
    checked = check_dataset(config.job, [config])
    assert checked.bit_depth == 12
    dataset = dataset_for(checked)
    assert dataset.bit_depth == 12
    augmentation = Augmentation.for_input(32, dataset.bit_depth)
    expected = round(1000 * 255 / 4095)  # 62; the darker image's own maximum made it 125
    for name in ("00000000_000.png", "00000001_000.png"):
        assert (augmentation.eval_pixels(str(src / "images" / name))[:, :12] == expected).all()
    assert main(["prepare", "chestxray", str(src), str(tmp_path / "dst"), "--size", "32", "--workers", "1"]) == 0
    summary = " ".join(capsys.readouterr().err.split())
    assert "4 images written" in summary and "16-bit rescaled: 2" in summary and "alpha flattened: 1" in summary
    assert "wide pixels scaled as 12-bit, 0-4095 to 0-255" in summary
    with (
        Image.open(tmp_path / "dst" / "images" / "00000000_000.png") as bright,
        Image.open(tmp_path / "dst" / "images" / "00000001_000.png") as dark,
        Image.open(tmp_path / "dst" / "images" / "00000002_000.png") as flat,
    ):
        assert bright.mode == dark.mode == flat.mode == "L"
        assert (np.asarray(bright)[:, :15] == expected).all() and (np.asarray(dark)[:, :15] == expected).all()
        assert np.asarray(flat)[:, :15].min() == 200 and np.asarray(flat)[:, 17:].max() == 0


def test_16_bit_images_without_a_checked_range_take_the_16_bits_png_declares(tmp_path):
    sixteen_bit(tmp_path / "x.png", 1000, 1500)
    assert (np.asarray(open_image(tmp_path / "x.png"))[:, :16] == round(1000 * 255 / 65535)).all()


def test_no_decodable_image_fails_the_dataset_check_and_prepare(tmp_path, capsys):
    src = tmp_path / "src"
    write_nih(src, nih_rows(20))
    for image in (src / "images").iterdir():
        image.write_bytes(b"not an image")
    config = RunConfig.flat("pytorch", "ddp", "tiny", 1, "cpu", 1, 1, dataset=f"chestxray:{src}", skip_bad_images=True)
    shown = r"images/\d{8}_000.png \(not an image PIL can read\)"
    with pytest.raises(
        UsageError, match=rf"none of its 20 images can be decoded: {shown}(; {shown}){{4}} and 15 more$"
    ):
        check_dataset(config.job, [])
    one_error_line(
        capsys,
        ["prepare", "chestxray", str(src), str(tmp_path / "dst"), "--size", "16"],
        "none of its 20 images can be decoded",
    )
    assert not (tmp_path / "dst").exists()


def damage(images: Path) -> list[str]:
    """Three kinds of bad file among a dataset's images, as a copy or a disk leaves them: not an
    image at all, a PNG cut short, a PNG with one byte flipped inside its pixel data."""
    whole = (images / "00000003_000.png").read_bytes()
    (images / "00000003_000.png").write_bytes(b"not an image")
    (images / "00000007_000.png").write_bytes((images / "00000007_000.png").read_bytes()[: len(whole) // 2])
    flipped = bytearray((images / "00000011_000.png").read_bytes())
    flipped[flipped.index(b"IDAT") + 8] ^= 0xFF
    (images / "00000011_000.png").write_bytes(bytes(flipped))
    return [str(images / f"{index:08d}_000.png") for index in (3, 7, 11)]


def test_undecodable_images_are_all_named_before_launching_or_left_out_when_asked(tmp_path, capsys):
    src = tmp_path / "src"
    write_nih(src, nih_rows(20))
    bad = damage(src / "images")
    args = ["compare", "--frameworks", "pytorch", "--gpus", "1", "--dataset", f"chestxray:{src}"]
    one_error_line(capsys, [*args, "--out", str(tmp_path / "out")], f"{src}: 3 of 20 images cannot be decoded: ")
    assert not (tmp_path / "out").exists()
    config = RunConfig.flat("pytorch", "ddp", "tiny", 1, "cpu", 1, 1, dataset=f"chestxray:{src}")
    with pytest.raises(UsageError) as refused:
        check_dataset(config.job, [config])
    message = str(refused.value)
    named = ("images/00000003_000.png (not an image", "images/00000007_000.png (", "images/00000011_000.png (")
    assert all(name in message for name in named), message
    assert message.endswith("; --skip-bad-images leaves them out")
    checked = check_dataset(config.job.with_changes(skip_bad_images=True), [config])
    assert sorted(checked.skipped_images) == bad and checked.bit_depth is None
    readable = dataset_for(checked)
    assert len(readable.files) == 17 and not set(bad) & set(readable.files)
    assert len(readable.train.targets) == len(readable.train) and len(readable.val.targets) == len(readable.val)
    with pytest.raises(UsageError, match="training images cannot fill one global batch of 20"):
        check_dataset(checked, [config.with_changes(batch_per_device=20, epochs=1)])


@pytest.mark.slow
def test_left_out_images_are_left_out_by_the_loaders_and_listed_on_the_row(tmp_path):
    src = tmp_path / "src"
    write_nih(src, nih_rows(24), size=40)
    bad = damage(src / "images")
    job = ["--framework", "pytorch", "--gpus", "1", *tiny_job(1, batch=4, image_size=32), "--workers", "0"]
    done = mgbench(
        "run",
        *job,
        "--dataset",
        f"chestxray:{src}",
        "--epochs",
        "1",
        "--skip-bad-images",
        "--out",
        str(tmp_path / "out"),
    )
    assert done.returncode == 0, done.stderr
    row = read_rows(tmp_path / "out").iloc[0]
    assert row.status == "ok" and sorted(row.skipped_images) == bad and row.skip_bad_images


@pytest.mark.parametrize(
    "args, message",
    [
        (["prepare", "chestxray", "{empty}", "{tmp}/dst"], "cannot read label file"),
        (["prepare", "chestxray", "{src}", "{file}"], "not a folder"),
        (["prepare", "chestxray", "{src}", "{tmp}/dst", "--workers", "0"], "--workers must be at least 1"),
        (["make-sample-chestxray", "{file}"], "not a folder"),
        (["make-sample-chestxray", "{src}"], "not empty"),
        (["make-sample-chestxray", "{tmp}/dst", "--workers", "0"], "--workers must be at least 1"),
        (["report", "{file}"], "not a folder"),
        (["run", "--dataset", "imagefolder:{file}"], "dataset path {file} is not a folder; imagefolder:PATH takes"),
        (["run", "--dataset", "chestxray:{file}"], "dataset path {file} is not a folder; chestxray:PATH takes"),
    ],
)
def test_bad_input_is_one_line_not_a_traceback(tmp_path, capsys, args, message):
    write_nih(tmp_path / "src", nih_rows(6))
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / LABEL_FILE).write_text("")
    (tmp_path / "file").write_text("a file")
    paths = {"empty": tmp_path / "empty", "src": tmp_path / "src", "file": tmp_path / "file", "tmp": tmp_path}
    one_error_line(capsys, [arg.format(**paths) for arg in args], message.format(**paths))
    assert not (tmp_path / "dst").exists()


class FullDisk:
    """A disk that fills up while a file named `name` is written: the file is created, its
    writes fail with ENOSPC, as a real full disk does (it is written to /dev/full). Installed on
    `os.open`, through which every file `prepare` and the sample writer make is created (in the
    worker processes too, which fork with it)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, name: str):
        real_open = os.open

        def filling_open(path, flags, *args, **kwargs) -> int:
            fd = real_open(path, flags, *args, **kwargs)
            if flags & os.O_CREAT and name in os.fspath(path):
                os.close(fd)
                return real_open("/dev/full", os.O_WRONLY | os.O_CLOEXEC)
            return fd

        monkeypatch.setattr(os, "open", filling_open)


@pytest.mark.parametrize(
    "verb, full_at",
    [
        ("prepare", MANIFEST),
        ("prepare", "00000003_000.png"),
        ("prepare", LABEL_FILE),
        ("make-sample-chestxray", "00000003_000.png"),
        ("make-sample-chestxray", LABEL_FILE),
    ],
)
def test_a_full_disk_is_one_line_and_a_rerun_with_overwrite_completes(tmp_path, capsys, monkeypatch, verb, full_at):
    write_nih(tmp_path / "src", nih_rows(12), size=32)
    dst = tmp_path / "dst"
    if verb == "prepare":
        args = ["prepare", "chestxray", str(tmp_path / "src"), str(dst), "--size", "32", "--workers", "2"]
    else:
        args = [verb, str(dst), "--n", "12", "--size", "32", "--workers", "2"]
    with monkeypatch.context() as patched:
        FullDisk(patched, full_at)
        assert main(args) == 2
    said = capsys.readouterr().err
    assert "Traceback" not in said and said.strip().splitlines()[-1].startswith(
        f"mgbench: error: cannot write to {dst}: No space left on device"
    ), said
    assert not [p for p in dst.rglob("*") if p.name.endswith(".partial")]
    assert not (dst / LABEL_FILE).exists()
    # The disk has room again: the same command, with --overwrite where the run wrote anything.
    assert main(args + (["--overwrite"] if any(dst.iterdir()) else [])) == 0, capsys.readouterr().err
    description = describe_dataset(f"chestxray:{dst}")
    assert len(description.files) == 12


def test_compare_names_an_empty_label_file_in_one_line(tmp_path):
    (tmp_path / LABEL_FILE).write_text("")
    done = mgbench(
        "compare", "--frameworks", "fake", "--dataset", f"chestxray:{tmp_path}", "--out", str(tmp_path / "out")
    )
    assert done.returncode == 2 and done.stderr.startswith("mgbench: error: cannot read label file"), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def running(process: psutil.Process) -> bool:
    """Alive, a zombie not counted: an orphan's stays until whoever adopted it reaps it."""
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.mark.parametrize("verb", ["make-sample-chestxray", "prepare"])
def test_double_ctrl_c_stops_at_once_with_no_label_file_and_no_workers_left(tmp_path, verb):
    dst = tmp_path / "dst"
    if verb == "prepare":
        write_nih(tmp_path / "src", nih_rows(200), size=32)
        args = ["prepare", "chestxray", str(tmp_path / "src"), str(dst), "--size", "2048", "--workers", "2"]
    else:
        args = ["make-sample-chestxray", str(dst), "--n", "20000", "--size", "32", "--workers", "2"]
    process = subprocess.Popen(
        [sys.executable, "-m", "mgbench", *args],
        env=cli_env(),
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=interruptible,
    )
    try:
        deadline = time.monotonic() + 30
        while not (dst / "images").is_dir() or not any((dst / "images").iterdir()):
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.05)
        workers = psutil.Process(process.pid).children(recursive=True)
        assert workers
        for _ in range(2):  # Ctrl-C in a terminal reaches the whole process group
            os.killpg(process.pid, signal.SIGINT)
            time.sleep(0.2)
        _, stderr = process.communicate(timeout=5)
        assert process.returncode == 130 and "Traceback" not in stderr and "interrupted" in stderr, stderr
        assert not (dst / LABEL_FILE).exists()
        assert not [w for w in workers if running(w)]
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()
