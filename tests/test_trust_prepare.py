"""`prepare` and `make-sample-chestxray` never delete their source and never write or delete
through a link in their destination, whoever planted it there."""

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from test_data_safety import one_error_line, snapshot
from test_datasets import nih_rows, write_nih

from mgbench.cli import main
from mgbench.datasets.chestxray import LABEL_FILE, TEST_LIST, TRAIN_LIST
from mgbench.datasets.output import MANIFEST
from mgbench.datasets.prepare import SKIPPED_FILE, resize_one
from mgbench.datasets.sample import write_image

SAMPLE = ["--n", "10", "--size", "32", "--workers", "1"]


def prepared(tmp_path: Path, capsys: pytest.CaptureFixture) -> list[str]:
    """The arguments of a prepare from `tmp_path/src` into `tmp_path/dst`, run once (its
    output read, so that what the test runs next is all there is to read)."""
    write_nih(tmp_path / "src", nih_rows(6))
    args = ["prepare", "chestxray", str(tmp_path / "src"), str(tmp_path / "dst"), "--size", "16", "--workers", "1"]
    assert main(args) == 0
    capsys.readouterr()
    return args


def sampled(tmp_path: Path, capsys: pytest.CaptureFixture) -> list[str]:
    """The arguments of a sample written into `tmp_path/dst`, run once (its output read)."""
    args = ["make-sample-chestxray", str(tmp_path / "dst"), *SAMPLE]
    assert main(args) == 0
    capsys.readouterr()
    return args


def outside(tmp_path: Path) -> Path:
    """A file outside every folder the writers touch: what a planted link points at."""
    victim = tmp_path / "elsewhere" / "victim.txt"
    victim.parent.mkdir()
    victim.write_text("not mgbench's")
    return victim


@pytest.mark.parametrize("image_format", ["png", "jpeg"])
def test_overwrite_through_a_linked_images_folder_is_refused_and_the_source_kept(tmp_path, capsys, image_format):
    args = prepared(tmp_path, capsys)
    src, dst = tmp_path / "src", tmp_path / "dst"
    shutil.rmtree(dst / "images")
    (dst / "images").symlink_to(src / "images")
    before, earlier = snapshot(src), snapshot(dst)
    one_error_line(capsys, [*args, "--format", image_format, "--overwrite"], f"{dst / 'images'} is a link")
    assert snapshot(src) == before and snapshot(dst) == earlier


def test_sample_overwrite_through_a_linked_images_folder_deletes_nothing(tmp_path, capsys):
    args = sampled(tmp_path, capsys)
    dst, precious = tmp_path / "dst", tmp_path / "precious"
    shutil.move(dst / "images", precious)
    (dst / "images").symlink_to(precious)
    before = snapshot(precious)
    one_error_line(capsys, [*args, "--overwrite"], f"{dst / 'images'} is a link")
    assert snapshot(precious) == before and len(before) == 10


def plant(where: Path, kind: str, victim: Path) -> None:
    where.unlink()
    if kind == "link":
        where.symlink_to(victim)
    elif kind == "fifo":
        os.mkfifo(where)
    else:
        where.mkdir()


@pytest.mark.parametrize("kind", ["link", "fifo", "folder"])
@pytest.mark.parametrize("name", ["images/00000002_000.png", LABEL_FILE, MANIFEST])
def test_overwrite_removes_only_regular_files_and_refuses_anything_else_listed(tmp_path, capsys, kind, name):
    args = prepared(tmp_path, capsys)
    dst, victim = tmp_path / "dst", outside(tmp_path)
    if name == MANIFEST and kind == "link":  # a manifest elsewhere that lists this folder's files
        shutil.copy(dst / MANIFEST, victim)
    plant(dst / name, kind, victim)
    before, kept = snapshot(dst), victim.read_bytes()
    one_error_line(capsys, [*args, "--overwrite"], f"{dst / name} is a link or not a regular file")
    assert snapshot(dst) == before and victim.read_bytes() == kept


@pytest.mark.parametrize(
    "verb, name",
    [
        *(("prepare", name) for name in (MANIFEST, SKIPPED_FILE, LABEL_FILE)),
        *(("make-sample-chestxray", name) for name in (MANIFEST, TRAIN_LIST, TEST_LIST, LABEL_FILE)),
    ],
)
def test_no_file_is_written_through_a_link_planted_at_its_temporary_name(tmp_path, capsys, verb, name):
    args = prepared(tmp_path, capsys) if verb == "prepare" else sampled(tmp_path, capsys)
    dst, victim = tmp_path / "dst", outside(tmp_path)
    (dst / f".{name}.partial").symlink_to(victim)
    assert main([*args, "--overwrite"]) == 0, capsys.readouterr().err
    assert victim.read_text() == "not mgbench's"
    assert not (dst / name).is_symlink() and (dst / name).is_file()


def test_worker_writes_replace_a_linked_image_and_refuse_a_linked_folder(tmp_path):
    write_nih(tmp_path / "src", nih_rows(1))
    source, dst, victim = str(tmp_path / "src" / "images" / "00000000_000.png"), tmp_path / "dst", outside(tmp_path)
    (dst / "images").mkdir(parents=True)
    writes = {
        "images/a.jpg": lambda target: resize_one(source, dst, target, 16, None),
        "images/b.png": lambda target: write_image(dst, target, np.zeros(14, np.int64), 32, 0, 0),
    }
    for target, write in writes.items():
        (dst / target).symlink_to(victim)
        write(target)
        assert victim.read_text() == "not mgbench's" and not (dst / target).is_symlink()
        with Image.open(dst / target) as image:
            assert image.mode == "L" and min(image.size) in (16, 32)
    shutil.rmtree(dst / "images")
    (dst / "images").symlink_to(victim.parent)
    for target, write in writes.items():
        with pytest.raises(OSError, match="a link or not a folder"):
            write(target)
    assert [p.name for p in victim.parent.iterdir()] == ["victim.txt"]


@pytest.mark.parametrize("layout", ["dst in src through a link", "dst a link to src", "src in dst through a link"])
def test_source_and_destination_must_not_overlap_once_links_are_resolved(tmp_path, capsys, layout):
    real = tmp_path / "real"
    write_nih(real / "src", nih_rows(6))
    (tmp_path / "alias").symlink_to(real / "src" if layout != "src in dst through a link" else real)
    src, dst = {
        "dst in src through a link": (real / "src", tmp_path / "alias" / "out"),
        "dst a link to src": (real / "src", tmp_path / "alias"),
        "src in dst through a link": (real / "src", tmp_path / "alias"),
    }[layout]
    before = snapshot(real)
    for extra in ([], ["--overwrite"]):
        one_error_line(capsys, ["prepare", "chestxray", str(src), str(dst), "--size", "16", *extra], "overlaps")
    assert snapshot(real) == before


def test_a_linked_folder_the_manifest_does_not_list_is_refused_before_any_image_is_written(tmp_path, capsys):
    args = sampled(tmp_path, capsys)
    dst, elsewhere = tmp_path / "dst", tmp_path / "elsewhere"
    shutil.rmtree(dst / "images")
    listed = (dst / MANIFEST).read_text().splitlines()
    (dst / MANIFEST).write_text("".join(f"{name}\n" for name in listed if not name.startswith("images/")))
    elsewhere.mkdir()
    (dst / "images").symlink_to(elsewhere)
    one_error_line(capsys, [*args, "--overwrite"], f"{dst / 'images'} is a link or not a folder")
    assert not any(elsewhere.iterdir())
