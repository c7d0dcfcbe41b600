"""The framework-neutral data layer: label parsing, splits, bad input, the sample set, `prepare`, the LR rule."""

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import mgbench
from PIL import Image

from mgbench.core.config import RunConfig
from mgbench.core.errors import UsageError
from mgbench.core.models import MODELS
from mgbench.datasets.augment import Augmentation
from mgbench.datasets.chestxray import NIH_LABELS, multi_hot
from mgbench.datasets.description import SPLITS
from mgbench.datasets.prepare import prepare_chestxray
from mgbench.datasets.resolve import check_dataset, describe_dataset
from mgbench.datasets.sample import draw_image, make_sample
from mgbench.datasets.sampling import (
    EpochBatchKeys,
    SampledLoader,
    epoch_batches,
    epoch_keys,
    rank_major_keys,
    validation_indices,
)
from mgbench.datasets.synthetic import Shard
from mgbench.measure.metrics import gathered_metrics, mean_auc, split_metrics
from mgbench.training.loaders import loader_workers

CSV_HEADER = "Image Index,Finding Labels,Follow-up #,Patient ID\n"


def write_nih(root, rows, size=40):
    """rows: (file, findings, patient); writes gray PNGs and the label file."""
    (root / "images").mkdir(parents=True)
    for name, _, _ in rows:
        Image.fromarray(np.full((size, size), 100, np.uint8)).save(root / "images" / name)
    (root / "Data_Entry_2017.csv").write_text(
        CSV_HEADER + "".join(f"{name},{labels},0,{patient}\n" for name, labels, patient in rows)
    )


def nih_rows(n):
    findings = ["No Finding", "Effusion|Mass", "Hernia", "Atelectasis|Cardiomegaly|Edema"]
    return [(f"{i:08d}_000.png", findings[i % 4], str(i)) for i in range(n)]


def test_finding_labels_split_on_bar_and_no_finding_is_all_zeros():
    assert multi_hot("No Finding", "x").sum() == 0
    row = multi_hot("Effusion|Mass", "x")
    assert row.sum() == 2 and row[NIH_LABELS.index("Effusion")] == 1 and row[NIH_LABELS.index("Mass")] == 1
    assert len(NIH_LABELS) == 14 and NIH_LABELS[0] == "Atelectasis" and NIH_LABELS[-1] == "Hernia"


def test_chestxray_targets_follow_the_csv_and_the_hash_splits_are_by_patient(tmp_path):
    rows = [(name, findings, str(i // 2)) for i, (name, findings, _) in enumerate(nih_rows(60))]
    write_nih(tmp_path, rows)
    description = describe_dataset(f"chestxray:{tmp_path}")
    assert description.multi_label and description.label_names == NIH_LABELS
    splits = (description.train, description.val, description.test)
    assert sum(map(len, splits)) == 60 and all(len(split) > 0 for split in splits)
    patients = [{int(path.rsplit("/", 1)[1][:8]) // 2 for path in split.files} for split in splits]
    assert not (patients[0] & patients[1] or patients[0] & patients[2] or patients[1] & patients[2])
    for split in splits:
        for path, target in zip(split.files, split.targets):
            index = int(path.rsplit("/", 1)[1][:8])
            assert np.array_equal(target, multi_hot(rows[index][1], ""))
    again = describe_dataset(f"chestxray:{tmp_path}")  # deterministic
    assert (again.val.files, again.test.files) == (description.val.files, description.test.files)


def test_official_split_files_are_honoured(tmp_path):
    rows = nih_rows(10)
    write_nih(tmp_path, rows)
    (tmp_path / "train_val_list.txt").write_text("".join(f"{r[0]}\n" for r in rows[:7]))
    (tmp_path / "test_list.txt").write_text("".join(f"{r[0]}\n" for r in rows[7:]))
    description = describe_dataset(f"chestxray:{tmp_path}")
    names = {split: sorted(p.rsplit("/", 1)[1] for p in description.split(split).files) for split in SPLITS}
    assert names["test"] == [r[0] for r in rows[7:]]
    assert names["val"] and sorted(names["train"] + names["val"]) == [r[0] for r in rows[:7]]
    (tmp_path / "test_list.txt").write_text("".join(f"{r[0]}\n" for r in rows[8:]))
    with pytest.raises(UsageError, match="00000007_000.png.*in neither"):
        describe_dataset(f"chestxray:{tmp_path}")


@pytest.mark.parametrize(
    "csv, message",
    [
        ("Image Index,Labels\na.png,Mass\n", "missing column.*'Finding Labels'"),
        ("Image Index,Finding Labels\na.png,Mass\nb.png,Broken Heart\n", "line 3: unknown finding 'Broken Heart'"),
        ("Image Index,Finding Labels\na.png,Mass\nghost.png,Mass\n", "1 image.*ghost.png"),
        ("Image Index,Finding Labels\na.png,Mass\nb.png,\n", "line 3: empty 'Finding Labels'"),
        (
            "Image Index,Finding Labels\na.png,No Finding|Effusion\n",
            "line 2: 'No Finding' cannot be combined with findings",
        ),
        ("", "cannot read label file"),
    ],
)
def test_bad_label_files_name_the_problem(tmp_path, csv, message):
    (tmp_path / "images").mkdir()
    Image.fromarray(np.zeros((8, 8), np.uint8)).save(tmp_path / "images" / "a.png")
    (tmp_path / "Data_Entry_2017.csv").write_text(csv)
    with pytest.raises(UsageError, match=message):
        describe_dataset(f"chestxray:{tmp_path}")


def test_dataset_strings_are_checked(tmp_path):
    assert describe_dataset("synthetic") is None
    with pytest.raises(UsageError, match="unknown dataset 'cifar'"):
        describe_dataset("cifar")
    with pytest.raises(UsageError, match="does not exist"):
        describe_dataset(f"chestxray:{tmp_path / 'nope'}")
    with pytest.raises(UsageError, match="no Data_Entry_2017.csv"):
        describe_dataset(f"chestxray:{tmp_path}")


def test_labels_mapping_csv_and_json(tmp_path):
    names = [f"{c}.jpg" for c in "abcdefghijklmnop"]
    for name in names:
        Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(tmp_path / name)
    (tmp_path / "labels.csv").write_text(
        "file,labels,split\na.jpg,cat|dog,train\nb.jpg,,train\nc.jpg,dog,val\nd.jpg,cat,val\ne.jpg,dog,test\n"
    )
    description = describe_dataset(f"labels:{tmp_path}")
    assert description.label_names == ("cat", "dog")
    assert description.train.targets.tolist() == [[1, 1], [0, 0]]
    assert description.val.targets.tolist() == [[0, 1], [1, 0]]
    assert description.test.files == [str(tmp_path / "e.jpg")]
    mapping = tmp_path / "other.json"
    mapping.write_text(json.dumps({name: ["x"] if i % 2 else "x|y" for i, name in enumerate(names)}))
    hashed = describe_dataset(f"labels:{mapping}")
    assert hashed.label_names == ("x", "y")
    splits = [{Path(f).name for f in hashed.split(name).files} for name in SPLITS]
    assert all(splits) and set().union(*splits) == set(names) and sum(map(len, splits)) == len(names)
    (tmp_path / "labels.csv").write_text("file,labels,split\na.jpg,cat,train\nb.jpg,dog,holdout\n")
    with pytest.raises(UsageError, match="line 3: split must be train, val or test, got 'holdout'"):
        describe_dataset(f"labels:{tmp_path}")
    mapping.write_text(json.dumps({"a.jpg": 3}))
    with pytest.raises(UsageError, match="labels of 'a.jpg'"):
        describe_dataset(f"labels:{mapping}")


def imagefolder(root, folders):
    """`folders`: {relative folder: images in it}, one class per last path part."""
    for folder, count in folders.items():
        (root / folder).mkdir(parents=True)
        for i in range(count):
            Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(root / folder / f"{i}.png")


def test_imagefolder_splits_come_from_its_folders_or_the_training_hash(tmp_path):
    imagefolder(tmp_path, {"train/ant": 6, "train/bee": 6, "val/ant": 1, "val/bee": 1})
    description = describe_dataset(f"imagefolder:{tmp_path}")
    assert not description.multi_label and description.label_names == ("ant", "bee")
    assert description.val.targets.tolist() == [0, 1] and "/val/" in description.val.files[0]
    # no test/ folder: the test split is hashed out of train/, and leaves it
    assert description.test.files and all("/train/" in f for f in description.test.files)
    assert not set(description.test.files) & set(description.train.files)
    assert len(description.train) + len(description.test) == 12
    spec = description.task_spec(MODELS["resnet50"])
    assert spec.num_classes == 2 and spec.objective.loss == "softmax"
    imagefolder(tmp_path, {"test/ant": 2, "test/bee": 1})
    with_test = describe_dataset(f"imagefolder:{tmp_path}")
    assert with_test.test.targets.tolist() == [0, 0, 1] and len(with_test.train) == 12
    (tmp_path / "val" / "wasp").mkdir()
    with pytest.raises(UsageError, match="class 'wasp' is not among the training classes"):
        describe_dataset(f"imagefolder:{tmp_path}")


def test_a_training_class_folder_without_images_is_refused_naming_each(tmp_path):
    """An empty class folder would be a class of the model's output that no image trains: refused,
    naming every such folder, in either layout; a held-out split may lack a class."""
    imagefolder(tmp_path / "flat", {"ant": 6, "bee": 6, "wasp": 0, "moth/nested": 0})
    (tmp_path / "flat" / "wasp" / "notes.txt").write_text("not an image")
    with pytest.raises(UsageError) as error:
        describe_dataset(f"imagefolder:{tmp_path / 'flat'}")
    assert str(error.value) == (
        f"class folders without images: {tmp_path / 'flat' / 'moth'}, {tmp_path / 'flat' / 'wasp'}; each is a "
        "class of the model's output that no image trains: remove them or add images"
    )
    imagefolder(tmp_path / "split", {"train/ant": 6, "train/bee": 6, "train/wasp": 0, "val/wasp": 2})
    with pytest.raises(UsageError, match=f"without images: {re.escape(str(tmp_path / 'split' / 'train' / 'wasp'))};"):
        describe_dataset(f"imagefolder:{tmp_path / 'split'}")
    (tmp_path / "split" / "train" / "wasp").rmdir()
    shutil.rmtree(tmp_path / "split" / "val" / "wasp")
    (tmp_path / "split" / "val" / "bee").mkdir()
    imagefolder(tmp_path / "split", {"val/ant": 2})
    described = describe_dataset(f"imagefolder:{tmp_path / 'split'}")
    assert described.label_names == ("ant", "bee") and described.val.targets.tolist() == [0, 0]


def test_batch_too_large_for_the_dataset_is_refused_before_running(tmp_path):
    write_nih(tmp_path, nih_rows(20))
    config = RunConfig.flat(
        framework="pytorch",
        strategy="ddp",
        model="tiny",
        devices=2,
        device_kind="cpu",
        batch_per_device=64,
        steps=1,
        dataset=f"chestxray:{tmp_path}",
        epochs=1,
    )
    with pytest.raises(UsageError, match="cannot fill one global batch of 128"):
        check_dataset(config.job, [config])


def test_compare_rejects_a_bad_dataset_before_any_run(tmp_path):
    done = mgbench(
        "compare", "--frameworks", "fake", "--dataset", f"chestxray:{tmp_path}", "--out", str(tmp_path / "out")
    )
    assert done.returncode == 2 and "no Data_Entry_2017.csv" in done.stderr
    assert not (tmp_path / "out").exists()


def test_sample_has_the_nih_layout_and_labels_drawn_in_pixels(tmp_path):
    make_sample(tmp_path / "a", 20, 64, seed=3)
    make_sample(tmp_path / "b", 20, 64, seed=3)
    frame = pd.read_csv(tmp_path / "a" / "Data_Entry_2017.csv")
    assert {"Image Index", "Finding Labels", "Patient ID", "Follow-up #"} <= set(frame.columns)
    assert all((tmp_path / "a" / "images" / name).is_file() for name in frame["Image Index"])
    listed = (tmp_path / "a" / "train_val_list.txt").read_text().split() + (
        tmp_path / "a" / "test_list.txt"
    ).read_text().split()
    assert sorted(listed) == sorted(frame["Image Index"])
    first = frame["Image Index"][0]
    with Image.open(tmp_path / "a" / "images" / first) as a, Image.open(tmp_path / "b" / "images" / first) as b:
        assert a.mode == "L" and a.size == (64, 64) and np.array_equal(np.asarray(a), np.asarray(b))
    # a finding changes its own cell of the grid and nothing else (beyond background noise)
    findings = np.zeros(14, np.int64)
    findings[5] = 1
    empty = draw_image(np.zeros(14, np.int64), 64, np.random.default_rng(0)).astype(int)
    marked = draw_image(findings, 64, np.random.default_rng(0)).astype(int)
    changed = np.argwhere(np.abs(marked - empty) > 40)
    row, col = divmod(5 + 1, 4)
    assert len(changed) > 20 and (changed // 16 == [row, col]).all()


def test_prepare_resizes_in_parallel_and_skips_corrupt_images(tmp_path):
    src = tmp_path / "src"
    write_nih(src, nih_rows(6), size=100)
    (src / "test_list.txt").write_text("00000004_000.png\n00000005_000.png\n")
    (src / "train_val_list.txt").write_text("".join(f"{i:08d}_000.png\n" for i in range(4)))
    (src / "images" / "00000002_000.png").write_bytes(b"not a png")
    calls = []
    report = prepare_chestxray(
        src, tmp_path / "dst", 50, "jpeg", workers=2, on_progress=lambda d, t: calls.append((d, t))
    )
    assert report.written == 5 and calls == [(d, 5) for d in range(1, 6)]  # the check left the corrupt one out
    assert len(report.skipped) == 1 and "00000002_000.png" in report.skipped[0]
    with Image.open(tmp_path / "dst" / "images" / "00000000_000.jpg") as image:
        assert image.size == (50, 50) and image.mode == "L"
    description = describe_dataset(f"chestxray:{tmp_path / 'dst'}")
    assert len(description.train) + len(description.val) == 3 and len(description.test) == 2
    assert "00000002_000.png" not in (tmp_path / "dst" / "train_val_list.txt").read_text()


def test_prepare_cli_lists_the_skipped_image(tmp_path):
    src = tmp_path / "src"
    write_nih(src, nih_rows(3))
    (src / "images" / "00000001_000.png").write_bytes(b"\x89PNG broken")
    done = mgbench("prepare", "chestxray", str(src), str(tmp_path / "dst"), "--size", "32", "--workers", "1")
    assert done.returncode == 0, done.stderr
    assert "1 unreadable" in done.stderr and "00000001_000.png" in done.stderr


def test_corrupt_image_at_load_time_names_the_file(tmp_path):
    path = tmp_path / "x.png"
    path.write_bytes(b"garbage")
    with pytest.raises(UsageError, match="x.png"):
        Augmentation.for_input(32).eval(str(path))


def test_augmentation_shapes_ranges_and_determinism(tmp_path):
    path = tmp_path / "g.png"
    Image.fromarray(np.tile(np.arange(80, dtype=np.uint8) * 3, (80, 1))).save(path)
    augmentation = Augmentation.for_input(64)
    assert augmentation.resize == 75
    image = augmentation.train(str(path), seed=0, epoch=0, index=1)
    assert image.shape == (3, 64, 64) and image.dtype == np.float32
    # grayscale expanded to three channels, each normalised with its own ImageNet statistics
    assert np.allclose(image[0] * 0.229 + 0.485, image[1] * 0.224 + 0.456, atol=1e-5)
    assert -2.2 < image.min() and image.max() < 2.7
    assert np.array_equal(image, augmentation.train(str(path), seed=0, epoch=0, index=1))
    draws = {augmentation.train(str(path), seed=0, epoch=e, index=1).tobytes() for e in range(8)}
    assert len(draws) > 1
    centre = augmentation.eval(str(path))
    assert np.array_equal(centre, augmentation.eval(str(path)))


@pytest.mark.parametrize(
    "size, mode, suffix", [((400, 350), "RGB", ".jpg"), ((300, 420), "L", ".png"), ((75, 90), "L", ".png")]
)
def test_a_crop_is_the_window_of_the_resized_image(tmp_path, size, mode, suffix):
    """Resizing only the crop's window gives the pixels of resizing the whole image and cropping
    it (within one gray level of rounding), every draw and the centre; an image already at the
    resize size is cropped exactly."""
    path = tmp_path / f"image{suffix}"
    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, size=(size[1], size[0], 3 if mode == "RGB" else 1), dtype=np.uint8)
    Image.fromarray(pixels.squeeze()).convert(mode).save(path)
    augmentation = Augmentation.for_input(64)
    with Image.open(path) as image:
        whole = image.convert(mode).resize(augmentation.resized_size(*image.size), Image.Resampling.BILINEAR)
    for index in range(6):
        draw = np.random.default_rng([0, 0, index])
        left = int(draw.integers(0, whole.size[0] - 64 + 1))
        top = int(draw.integers(0, whole.size[1] - 64 + 1))
        expected = np.asarray(whole.crop((left, top, left + 64, top + 64)), dtype=int)
        if draw.random() < 0.5:
            expected = expected[:, ::-1]
        got = augmentation.train_pixels(str(path), seed=0, epoch=0, index=index)[
            :, :, 0 if mode == "L" else slice(None)
        ]
        exact = whole.size == size
        assert np.abs(got.astype(int) - expected).max() <= (0 if exact else 1)
    left, top = (whole.size[0] - 64) // 2, (whole.size[1] - 64) // 2
    centre = np.asarray(whole.crop((left, top, left + 64, top + 64)), dtype=int)
    assert np.abs(augmentation.eval_pixels(str(path))[:, :, 0 if mode == "L" else slice(None)] - centre).max() <= 1


def test_shards_of_an_epoch_are_the_single_process_batches():
    whole = epoch_batches(50, 8, Shard(0, 8), epoch=2, seed=1)
    halves = [epoch_batches(50, 8, Shard.of_rank(r, 2, 8), epoch=2, seed=1) for r in range(2)]
    assert len(whole) == 6
    assert [a + b for a, b in zip(*halves)] == whole
    assert len({i for batch in whole for i in batch}) == 48
    assert epoch_batches(50, 8, Shard(0, 8), epoch=3, seed=1) != whole
    assert sorted(validation_indices(7, 0, 2) + validation_indices(7, 1, 2)) == list(range(7))


def test_mean_auc_skips_labels_without_both_classes():
    targets = np.array([[1, 0, 1], [0, 0, 1], [1, 0, 1], [0, 0, 1]], np.float32)
    scores = np.array([[0.9, 0.1, 0.5], [0.2, 0.3, 0.5], [0.7, 0.2, 0.5], [0.6, 0.4, 0.5]])
    assert mean_auc(targets, scores) == pytest.approx(1.0)
    assert mean_auc(np.array([0, 1, 1]), np.array([[0.8, 0.2], [0.3, 0.7], [0.9, 0.1]])) == pytest.approx(0.5)


def test_split_metrics_give_top1_for_class_folders_and_gather_every_shard():
    targets = np.array([0, 1, 2, 1])
    scores = np.array([[0.7, 0.2, 0.1], [0.1, 0.6, 0.3], [0.5, 0.1, 0.4], [0.2, 0.3, 0.5]])
    metrics = split_metrics(targets, scores, multi_label=False)
    assert set(metrics) == {"auc", "top1"} and metrics["top1"] == pytest.approx(0.5)
    assert set(split_metrics(np.eye(3)[targets], scores, multi_label=True)) == {"auc"}
    shards = [(1.0, scores[:3], targets[:3]), (3.0, scores[3:], targets[3:])]
    gathered = gathered_metrics(shards, multi_label=False)
    assert gathered == {"loss": pytest.approx(1.0), **metrics}


def test_rank_major_keys_cut_as_chainermn_scatters_are_each_ranks_shared_shard():
    """ChainerMN's `scatter_dataset` gives rank r the r-th of W equal contiguous parts: of the
    rank-major keys that is exactly what the shared sampler gives rank r, batch after batch."""
    size, global_batch, world = 50, 8, 2
    keys = rank_major_keys(size, global_batch, world, epoch=3, seed=1)
    part = len(keys) // world
    for rank in range(world):
        shard = Shard.of_rank(rank, world, global_batch)
        expected = [key for batch in epoch_keys(size, global_batch, shard, (3,), seed=1) for key in batch]
        assert keys[rank * part : (rank + 1) * part] == expected
        assert all(epoch == 3 for epoch, _ in expected)
    assert sorted(index for _, index in keys) == sorted(
        index for batch in epoch_batches(size, global_batch, Shard(0, global_batch), 3, seed=1) for index in batch
    )


def test_loader_workers_share_the_cores_and_leave_each_training_process_one(monkeypatch):
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: set(range(16)))
    assert loader_workers(None, 1) == 15
    assert loader_workers(None, 2) == 7
    assert loader_workers(None, 32) == 1
    assert loader_workers(3, 1) == 3


def test_a_sampled_loader_sets_its_sampler_before_each_iterator() -> None:
    sampler = EpochBatchKeys(size=8, global_batch=4, shard=Shard(0, 4), seed=1)

    class Loader:  # a map-style loader over its batch sampler, as torch's and Gluon's are
        def __iter__(self):
            return iter(sampler)

    loader = SampledLoader(sampler, Loader())
    assert len(loader) == 2
    epoch_1 = list(loader.epoch(1))
    assert epoch_1 == list(epoch_keys(8, 4, Shard(0, 4), (1,), seed=1)) and {
        e for batch in epoch_1 for e, _ in batch
    } == {1}
    stream = loader.endless()
    first_five = [next(stream) for _ in range(5)]  # past the end of epoch 0 into 1 and 2
    assert [batch[0][0] for batch in first_five] == [0, 0, 1, 1, 2]
