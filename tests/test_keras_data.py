"""The Keras family on real data: keras-tf and tensorflow through tf.data, keras-jax and
keras-torch through keras.utils.PyDataset, each in its own environment.

The loaders must hand every device, per epoch, exactly the shared reader's samples: the shard
of its rank of each global batch of the epoch's permutation (`sampling.epoch_batches`), each
image's pixels those of `Augmentation.train` for (seed, epoch, image) and its labels that
image's row. Each framework trains one epoch of the sample ChestX-ray14 folder on 2 CPU devices
with worker processes, validating (AUC) on the row. Strategies that cannot keep data on the
devices say why in the registry.
"""

import os
import subprocess

import numpy as np
import pandas as pd
import pytest
from conftest import TESTS, framework_python, mgbench, read_rows

from mgbench.core.config import RunConfig
from mgbench.datasets.augment import Augmentation
from mgbench.datasets.resolve import describe_dataset
from mgbench.datasets.sample import make_sample
from mgbench.datasets.sampling import epoch_batches
from mgbench.datasets.synthetic import Shard
from mgbench.frameworks.registry import framework_spec

ROOT = str(TESTS.parent)
KERAS_FAMILY = ("keras-tf", "keras-jax", "keras-torch", "tensorflow")


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    root = tmp_path_factory.mktemp("sample")
    make_sample(root, 64, 40, seed=0)
    return root


def sample_config(framework: str, strategy: str, sample) -> RunConfig:
    return RunConfig.flat(
        framework=framework,
        strategy=strategy,
        model="tiny",
        devices=2,
        device_kind="cpu",
        batch_per_device=4,
        steps=1,
        data_format="channels_last",
        dataset=f"chestxray:{sample}",
        epochs=1,
        image_size=32,
        workers=2,
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "framework, strategy", [("keras-jax", "jax-shard-map"), ("keras-tf", "mirrored"), ("keras-tf", "mirrored-unstaged")]
)
def test_each_device_gets_its_shard_of_the_shared_readers_epoch(sample, tmp_path, framework, strategy):
    """Per epoch, device d of 2 holds rank d's shard of each global batch: the shared reader's
    images (decoded, cropped, flipped for that epoch, normalised) and their labels, every
    training image at most once and the epoch's whole batches all there. keras-jax's probe also
    reads rank 1's shard as keras-torch's rank 1 does (one process per device)."""
    python = framework_python(framework)
    config = sample_config(framework, strategy, sample)
    out = tmp_path / "batches.npz"
    done = subprocess.run(
        [str(python), str(TESTS / "keras_loader_probe.py"), framework, strategy, config.to_json(), str(out)],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=ROOT),
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    dataset = describe_dataset(config.job.dataset)
    train, augmentation = dataset.train, Augmentation.for_input(32)
    size, batch = len(train), config.global_batch
    with np.load(out) as got:
        steps = int(got["steps"])
        assert steps == size // batch >= 2
        for epoch in (0, 1):
            seen = []
            for device in range(2):
                shard = Shard.of_rank(device, 2, batch)
                for step, indices in enumerate(epoch_batches(size, batch, shard, epoch, config.job.seed)):
                    expected = np.stack(
                        [augmentation.train(train.files[i], config.job.seed, epoch, i) for i in indices]
                    )
                    images = got[f"{epoch}-{step}-{device}-images"]
                    np.testing.assert_allclose(images, expected.transpose(0, 2, 3, 1), rtol=0, atol=1e-5)
                    np.testing.assert_array_equal(got[f"{epoch}-{step}-{device}-labels"], train.targets[indices])
                    seen += indices
                    if framework == "keras-jax" and device == 1:
                        pixels = [augmentation.train_pixels(train.files[i], config.job.seed, epoch, i) for i in indices]
                        np.testing.assert_array_equal(got[f"rank1-{epoch}-{step}-pixels"], np.stack(pixels))
                        np.testing.assert_array_equal(got[f"rank1-{epoch}-{step}-labels"], train.targets[indices])
                assert f"{epoch}-{steps}-{device}-images" not in got
            assert len(seen) == len(set(seen)) == steps * batch
        assert not np.array_equal(got["0-0-0-images"], got["1-0-0-images"])


@pytest.mark.slow
@pytest.mark.parametrize("framework", KERAS_FAMILY)
def test_one_epoch_of_the_sample_on_two_devices_through_the_frameworks_loader(sample, tmp_path, framework):
    framework_python(framework)
    strategy = framework_spec(framework).defaults[0]
    out = tmp_path / "run"
    done = mgbench(
        "run",
        "--framework",
        framework,
        "--strategy",
        strategy,
        "--gpus",
        "2",
        "--device",
        "cpu",
        "--model",
        "tiny",
        "--image-size",
        "32",
        "--batch-per-gpu",
        "8",
        "--dataset",
        f"chestxray:{sample}",
        "--epochs",
        "1",
        "--workers",
        "1",
        "--out",
        str(out),
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    row = read_rows(out).iloc[0]
    assert row.status == "ok" and row.devices == 2 and row.loader_workers == 1
    (epoch,) = row.epoch_metrics
    assert epoch["epoch"] == 1 and epoch["train_seconds"] > 0 and epoch["val_seconds"] > 0
    assert 0 < epoch["val_auc"] < 1 and epoch["val_loss"] > 0
    assert row.eval_metrics == {"loss": epoch["val_loss"], "auc": epoch["val_auc"]}
    compile_step = int(pd.notna(row.compile_seconds))  # keras-jax's first step compiles, untimed
    assert len(row.losses) + compile_step == len(describe_dataset(f"chestxray:{sample}").train) // 16


@pytest.mark.parametrize("framework", KERAS_FAMILY)
def test_staged_and_unstaged_strategies_and_unstaged_ones_refuse_data_on_device_saying_why(framework):
    spec = framework_spec(framework)
    unstaged = [s for s in spec.strategies if s.name.endswith("-unstaged")]
    assert unstaged
    for strategy in spec.strategies:
        refusal = spec.refusal(RunConfig.flat(framework, strategy.name, "tiny", 2, "cuda", 4, 1, data_on_device=True))
        if strategy in unstaged:
            spec.strategy(strategy.name.removesuffix("-unstaged"))  # its staged counterpart
            assert "--data-on-device" in refusal and strategy.no_data_on_device_note in refusal
        else:
            assert refusal is None
