"""The PyTorch loader over a dataset description, and convergence on the sample set.

The convergence test trains the `tiny` model in epochs through `compare` (1 process, and
DDP over 2 gloo processes on the same global batch) on a generated sample whose labels are
drawn into the pixels, and requires a validation AUC of at least 0.9 from both. Its runs start
from torch's own draw (`--init framework`), whose rows and summary say no start was shared.
"""

import json

import numpy as np
import psutil
import pytest
from conftest import mgbench, one_epoch_rows

from mgbench.core.config import RunConfig
from mgbench.datasets.sample import make_sample
from mgbench.training.driver import closed

torch = pytest.importorskip("torch", reason="the PyTorch adapter needs torch")
create_adapter = pytest.importorskip("mgbench.frameworks.pytorch.adapter").create_adapter


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    root = tmp_path_factory.mktemp("sample")
    make_sample(root, 64, 40, seed=0)
    return root


def trainer_for(sample, **changes):
    config = RunConfig.flat(
        **{
            **dict(
                framework="pytorch",
                strategy="dp",
                model="tiny",
                devices=1,
                device_kind="cpu",
                batch_per_device=8,
                steps=1,
                dataset=f"chestxray:{sample}",
                epochs=1,
                image_size=32,
                workers=0,
            ),
            **changes,
        }
    )
    adapter = create_adapter(config.strategy)
    adapter.setup(config)
    return adapter


def test_loader_batches_shapes_labels_and_determinism(sample):
    adapter = trainer_for(sample)
    assert adapter.steps_per_epoch() == len(adapter.dataset.train) // 8
    images, labels = next(adapter.epoch_batches(0))
    assert images.shape == (8, 3, 32, 32) and images.dtype == torch.float32
    assert labels.shape == (8, 14) and set(labels.unique().tolist()) <= {0.0, 1.0}
    again, _ = next(adapter.epoch_batches(0))
    assert torch.equal(images, again)
    other, _ = next(adapter.epoch_batches(1))
    assert not torch.equal(images, other)
    # with worker processes the bytes are the same: draws depend on (seed, epoch, image) only
    with_workers, _ = next(trainer_for(sample, workers=2).epoch_batches(0))
    assert torch.equal(images, with_workers)
    assert sum(1 for _ in adapter.epoch_batches(0)) == adapter.steps_per_epoch()


def test_pixels_normalised_after_the_copy_equal_the_shared_host_augmentation(sample):
    """Workers ship uint8 pixels and the adapter normalises them; the result must be the float
    images `Augmentation.train` makes for the same (seed, epoch, image), within float32's rounding
    (the device's one multiply-add per channel against the host's three operations)."""
    adapter = trainer_for(sample)
    images, _ = next(adapter.epoch_batches(1))
    keys = next(iter(adapter.loaders.train.sampler))
    dataset = adapter.loaders.train.loader.dataset
    expected = np.stack(
        [dataset.augmentation.train(dataset.split.files[i], dataset.seed, epoch, i) for epoch, i in keys]
    )
    assert images.dtype == torch.float32 and images.shape == expected.shape
    np.testing.assert_allclose(images.numpy(), expected, rtol=0, atol=1e-6)


def test_steps_stream_runs_through_epochs_in_one_loader_pass(sample):
    """A steps-timed run reads epoch 0 then epoch 1, the same batches the epoch loop gives."""
    adapter = trainer_for(sample, workers=2)
    per_epoch = adapter.steps_per_epoch()
    stream = adapter.batches()
    streamed = [next(stream) for _ in range(per_epoch + 2)]
    expected = [*adapter.epoch_batches(0), *list(adapter.epoch_batches(1))[:2]]
    for (images, labels), (want_images, want_labels) in zip(streamed, expected, strict=True):
        assert torch.equal(images, want_images) and torch.equal(labels, want_labels)


def test_head_follows_the_dataset_and_evaluate_scores_the_named_split(sample):
    adapter = trainer_for(sample)
    assert adapter.core[-1].out_features == 14
    metrics = {split: adapter.evaluate(split) for split in ("val", "test")}
    for scored in metrics.values():
        assert set(scored) == {"loss", "auc"} and 0.0 <= scored["auc"] <= 1.0 and scored["loss"] > 0
    assert metrics["val"] != metrics["test"]
    scored = sum(len(loader.dataset) for loader in adapter.loaders.held_out.values())
    assert scored == len(adapter.dataset.val) + len(adapter.dataset.test)


def fed_with_workers(adapter):
    """The adapter's feed after its first batch, and the loader workers that batch started (two,
    running)."""
    before = {child.pid for child in psutil.Process().children()}
    stream = adapter.batches()
    next(stream)
    workers = [child for child in psutil.Process().children() if child.pid not in before]
    assert len(workers) == 2 and all(worker.is_running() for worker in workers)
    return stream, workers


def test_closing_the_feed_and_the_adapter_ends_the_loader_workers_in_the_run(sample):
    """The driver closes the feed it read, then the adapter: the persistent loader's workers end
    there, not at the interpreter's exit (where torch's exit hook waits on each worker in turn)."""
    adapter = trainer_for(sample, workers=2)
    stream, workers = fed_with_workers(adapter)
    closed(stream)
    adapter.close()
    assert not any(worker.is_running() for worker in workers)


def test_a_run_timed_in_steps_keeps_no_worker_pool_past_its_feed(sample):
    """Timed in steps the loaders are made once, so not kept: closing the feed ends the training
    loader's workers by itself, and a run that fails before `close` leaves torch no exit hook
    that would wait on them (torch registers one for persistent pinned loaders)."""
    adapter = trainer_for(sample, workers=2, epochs=None, steps=4)
    assert not any(
        loader.persistent_workers for loader in [adapter.loaders.train.loader, *adapter.loaders.held_out.values()]
    )
    stream, workers = fed_with_workers(adapter)
    closed(stream)
    assert not any(worker.is_running() for worker in workers)


def test_learning_rate_is_set_by_the_driver(sample):
    adapter = trainer_for(sample)
    adapter.set_learning_rate(0.123)
    assert all(group["lr"] == 0.123 for group in adapter.optimizer.param_groups)


@pytest.mark.slow
def test_one_device_and_two_process_ddp_both_reach_auc_0_9(tmp_path):
    data = tmp_path / "data"
    assert mgbench("make-sample-chestxray", str(data), "--n", "320", "--size", "38").returncode == 0
    out = tmp_path / "run"
    done = mgbench(
        "compare",
        "--frameworks",
        "pytorch",
        "--strategies",
        "ddp",
        "--gpus",
        "2",
        "--scaling",
        "strong",
        "--model",
        "tiny",
        "--init",
        "framework",
        "--image-size",
        "32",
        "--dataset",
        f"chestxray:{data}",
        "--epochs",
        "24",
        "--batch-per-gpu",
        "16",
        "--lr",
        "1.0",
        "--lr-reference-batch",
        "16",
        "--workers",
        "0",
        "--device",
        "cpu",
        "--out",
        str(out),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(row["devices"] for row in rows) == [1, 2]
    for row in rows:
        curve = row["epoch_metrics"]
        assert [e["epoch"] for e in curve] == list(range(1, 25))
        assert all(e["val_seconds"] > 0 and e["train_seconds"] > 0 for e in curve)
        assert curve[-1]["val_auc"] >= 0.9, (row["devices"], [round(e["val_auc"], 3) for e in curve])
        assert row["eval_metrics"]["auc"] == curve[-1]["val_auc"]
        assert row["test_metrics"]["auc"] >= 0.85 and row["loader"] == "torch.utils.data.DataLoader"
        assert 0 <= row["input_wait_fraction"] < 1
        assert row["loader_workers"] == 0
    one, two = sorted(rows, key=lambda row: row["devices"])
    assert np.isclose(one["epoch_metrics"][-1]["val_auc"], two["epoch_metrics"][-1]["val_auc"], atol=0.02)
    # --init framework: each run drew its own start, so none is kept, carried or checked
    assert {row["init"] for row in rows} == {"framework"} and {row["init_digest"] for row in rows} == {None}
    assert not (out / "initial-weights.npz").exists()
    assert "Same start: not checked" in (out / "summary.md").read_text().splitlines()[-1]


@pytest.mark.slow
def test_one_epoch_of_the_sample_with_unstaged_input(tmp_path):
    sample = tmp_path / "sample"
    assert mgbench("make-sample-chestxray", str(sample), "--n", "64", "--size", "38").returncode == 0
    rows = one_epoch_rows("pytorch", "ddp-unstaged", sample, tmp_path / "run", workers=2)
    assert {row["strategy"] for row in rows} == {"ddp-unstaged"}
