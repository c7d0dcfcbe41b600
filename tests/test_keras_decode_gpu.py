"""`--decode gpu` for keras-torch and keras-jax: Keras' own loader hands over the JPEGs' bytes and
windows, the adapter decodes and crops them on its device (torchvision; for keras-jax handed to
JAX by DLPack). No GPU here: the CPU is the decoding device (`keras_decode_probe.py`), which is
the GPU path's arithmetic on another device. Each run's batches, training (random windows and
flips) and validation (centre windows, keras-jax's last batch padded), must equal the host
loader's within 2 gray levels, with the same labels in the same order.
"""

import json
import os
import subprocess

import numpy as np
import pytest
from conftest import TESTS, framework_python
from test_decode_gpu import jpeg_folder

from mgbench.core.config import RunConfig
from mgbench.datasets.augment import IMAGENET_STD
from mgbench.frameworks.registry import framework_spec

SIZES = [(120, 90), (50, 40), (90, 130), (75, 75), (64, 100), (200, 60)]
LEVEL = 2 / 255 / float(IMAGENET_STD.min())
"""2 gray levels of uint8 pixels, in the normalised input's units."""


def probe(framework: str, root, out) -> dict:
    done = subprocess.run(
        [framework_python(framework), str(TESTS / "keras_decode_probe.py"), framework, str(root), str(out)],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(TESTS.parent)),
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def assert_device_batches_are_the_hosts(arrays, train_steps: int, val_steps: int, batch: int) -> None:
    """Every device-decoded batch against the host-decoded one of the same split and step."""
    for split, steps in (("train", train_steps), ("val", val_steps)):
        assert not any(f"gpu-{split}-{steps}-images" in key for key in arrays.files)
        for step in range(steps):
            images, expected = arrays[f"gpu-{split}-{step}-images"], arrays[f"cpu-{split}-{step}-images"]
            assert images.dtype == expected.dtype == np.float32
            assert images.shape == expected.shape and images.shape[1:] == (32, 32, 3)
            assert len(images) == (batch if split == "train" or step < steps - 1 else len(SIZES) % batch or batch)
            assert np.array_equal(arrays[f"gpu-{split}-{step}-labels"], arrays[f"cpu-{split}-{step}-labels"])
            assert np.abs(images - expected).max() <= LEVEL + 1e-6, (split, step)


@pytest.mark.parametrize("framework", ["keras-torch", "keras-jax"])
def test_the_byte_handing_pydataset_decoded_on_a_device_gives_the_host_loaders_batches(tmp_path, framework):
    root = jpeg_folder(tmp_path / "jpegs", SIZES)
    found = probe(framework, root, tmp_path / "batches.npz")
    assert found["encoded"] == ["uint8", True, [2, 5], 2]
    assert found["encoded_mapped"]  # the files crossed from the worker through shared memory, not the pipe
    assert found["cpu_decoder"].startswith("pillow") and found["cpu_decoder"].endswith(" (host)")  # the env's build
    batch = 4 if framework == "keras-jax" else 2
    with np.load(tmp_path / "batches.npz") as arrays:
        assert_device_batches_are_the_hosts(arrays, len(SIZES) // batch, -(-len(SIZES) // batch), batch)
    if framework == "keras-torch":
        assert found["gpu_decoder"] == "nvJPEG (torchvision.io.decode_jpeg) on cpu, crop on device"
    else:
        assert (
            found["gpu_decoder"]
            == "nvJPEG (torchvision.io.decode_jpeg) on cpu, crop on device, handed to JAX by DLPack"
        )
        # The last validation batch (2 images) padded to the global batch, each device its half.
        assert found["gpu_placed"] == {"dtype": "uint8", "shape": [4, 32, 32, 3],
                                       "shards": {"cpu:0": [0, 2], "cpu:1": [2, 4]}}  # fmt: skip


def test_keras_on_torch_and_jax_declare_a_device_decoder_and_jax_leaves_the_gpu_memory_to_share():
    config = RunConfig.flat(
        "keras-jax", "jax-shard-map", "tiny", 2, "cuda", 2, 1, dataset="imagefolder:/x", decode="gpu"
    )
    assert framework_spec("keras-torch").capabilities.gpu_decoder == "nvJPEG (torchvision.io.decode_jpeg)"
    jax_spec = framework_spec("keras-jax")
    assert jax_spec.capabilities.gpu_decoder == "nvJPEG (torchvision.io.decode_jpeg), handed to JAX by DLPack"
    assert jax_spec.variables_for(config)["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    assert "XLA_PYTHON_CLIENT_PREALLOCATE" not in jax_spec.variables_for(config.with_changes(decode="cpu"))
