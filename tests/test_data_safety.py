"""Nothing lost, nothing silently wrong: what `prepare`, `make-sample-chestxray` and the dataset
check do with destinations that hold other data, odd pixels, bad input and Ctrl-C."""

import numpy as np
import pytest
from PIL import Image

from conftest import mgbench
from mgbench.cli import main
from mgbench.common.errors import UsageError
from mgbench.datasets.augment import Augmentation
from mgbench.datasets.chestxray import LABEL_FILE
from mgbench.datasets.images import open_image
from mgbench.datasets.resolve import check_dataset
from test_datasets import nih_rows, write_nih


def one_error_line(capsys: pytest.CaptureFixture, args: list[str], message: str) -> None:
    """`mgbench ARGS` exits 2 with one line `mgbench: error: ...` holding `message`."""
    assert main(args) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mgbench: error: ") and message in lines[0], lines


def test_16_bit_images_are_scaled_by_their_range_and_alpha_is_flattened(tmp_path, capsys):
    src = tmp_path / "src"
    write_nih(src, nih_rows(3), size=32)
    ramp = np.tile(np.linspace(0, 4095, 32).round().astype(np.uint16), (32, 1))  # a 12-bit detector
    Image.fromarray(ramp).save(src / "images" / "00000000_000.png")
    rgba = np.zeros((32, 32, 4), np.uint8)
    rgba[..., :3], rgba[:, :16, 3] = 200, 255  # the right half is transparent
    Image.fromarray(rgba, mode="RGBA").save(src / "images" / "00000001_000.png")
    pixels = np.asarray(open_image(src / "images" / "00000000_000.png"))
    assert pixels.min() == 0 and pixels.max() == 255 and abs(pixels.mean() - 127.5) < 2
    assert abs(Augmentation.for_input(32).eval_pixels(str(src / "images" / "00000000_000.png")).mean() - 127.5) < 8
    assert main(["prepare", "chestxray", str(src), str(tmp_path / "dst"), "--size", "32", "--workers", "1"]) == 0
    summary = capsys.readouterr().err
    assert "3 images written" in summary and "16-bit rescaled: 1" in summary and "alpha flattened: 1" in summary
    with Image.open(tmp_path / "dst" / "images" / "00000000_000.png") as wide, \
            Image.open(tmp_path / "dst" / "images" / "00000001_000.png") as flat:
        assert wide.mode == flat.mode == "L"
        assert abs(np.asarray(wide).mean() - 127.5) < 2
        assert np.asarray(flat)[:, :15].min() == 200 and np.asarray(flat)[:, 17:].max() == 0


def test_no_decodable_image_fails_the_dataset_check_and_prepare(tmp_path, capsys):
    src = tmp_path / "src"
    write_nih(src, nih_rows(20))
    for image in (src / "images").iterdir():
        image.write_bytes(b"not an image")
    with pytest.raises(UsageError, match="none of the 8 images tried"):
        check_dataset(f"chestxray:{src}", [])
    one_error_line(capsys, ["prepare", "chestxray", str(src), str(tmp_path / "dst"), "--size", "16"], "cannot decode")
    assert not (tmp_path / "dst").exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["prepare", "chestxray", "{empty}", "{tmp}/dst"], "cannot read label file"),
    ],
)
def test_bad_input_is_one_line_not_a_traceback(tmp_path, capsys, args, message):
    write_nih(tmp_path / "src", nih_rows(6))
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / LABEL_FILE).write_text("")
    (tmp_path / "file").write_text("a file")
    paths = {"empty": tmp_path / "empty", "src": tmp_path / "src", "file": tmp_path / "file", "tmp": tmp_path}
    one_error_line(capsys, [arg.format(**paths) for arg in args], message)
    assert not (tmp_path / "dst").exists()


def test_compare_names_an_empty_label_file_in_one_line(tmp_path):
    (tmp_path / LABEL_FILE).write_text("")
    done = mgbench("compare", "--frameworks", "fake", "--dataset", f"chestxray:{tmp_path}", "--out", str(tmp_path / "out"))
    assert done.returncode == 2 and done.stderr.startswith("mgbench: error: cannot read label file"), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1

