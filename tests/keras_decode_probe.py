"""Run inside the keras-torch or keras-jax environment by tests/test_keras_decode_gpu.py: the
`--decode gpu` path of the adapter's loader and placement, with the CPU as the decoding device.

Reads a JPEG class folder's training split (epoch 0) and validation split through Keras' own
loader twice, once handing over files (`data.FileBytes`, decoded by the adapter's placement) and
once pixels (`data.HostPixels`, the workers decoded), both through the adapter's `_fed` (the
placement and Keras' layout a run feeds its steps). Writes an .npz with both runs' images and
labels per batch, and what the device path's arrays are (dtype, shape, devices) and whether the
files' bytes arrived mapped from shared memory (the hand-off) rather than through the pipe.

The adapter is built without `setup`, which would start a process group (keras-torch) or build
a model (keras-jax); a `--decode gpu` job on CPU devices is refused before any adapter runs.

    python tests/keras_decode_probe.py FRAMEWORK FOLDER OUT.npz
"""

import json
import mmap
import os
import sys
from functools import partial

import numpy as np

from mgbench.core.config import RunConfig
from mgbench.datasets.resolve import describe_dataset
from mgbench.datasets.synthetic import Shard
from mgbench.frameworks.registry import framework_spec

STRATEGIES = {"keras-torch": "ddp", "keras-jax": "jax-shard-map"}
SIZE = 32


def configs(framework: str, folder: str) -> dict[str, RunConfig]:
    """The run's config on GPU devices (which the loader never asks about), by `--decode`."""
    devices = 2 if framework == "keras-jax" else 1
    config = RunConfig.flat(framework, STRATEGIES[framework], "tiny", devices, "cuda", 2, 1,
                       dataset=f"imagefolder:{folder}", image_size=SIZE, workers=1,
                       data_format="channels_last")  # fmt: skip
    return {decode: config.with_changes(decode=decode) for decode in ("gpu", "cpu")}


def keras_torch_feeds(config: RunConfig, real, staged: bool):
    """keras-torch's `_fed` over `real` with the CPU as the device, and the run's decoder."""
    import torch

    from mgbench.frameworks.keras_torch.adapter import KerasTorchAdapter, as_tensors
    from mgbench.frameworks.pytorch.data import decoding_at

    adapter = KerasTorchAdapter(STRATEGIES["keras-torch"])
    adapter.use_cuda, adapter.staged, adapter.channels_last = False, staged, True
    adapter.decoding = decoding_at(real.site, config.job.input_size, torch.device("cpu"), channels_last=True)
    train = [(images.numpy(), labels.numpy()) for images, labels in adapter._fed(real.train(Shard(0, 2), 0))]
    val = [adapter.decoding.place(as_tensors(batch)) for batch in real.evaluation("val", 0, 1, 2)]
    val = [(adapter.keras_layout(images).numpy(), labels.numpy()) for images, labels in val]
    return train, val, adapter.decoding.decoder, {}


def keras_jax_feeds(config: RunConfig, real, staged: bool):
    """keras-jax's `_fed` over `real` on 2 host devices, the validation split padded as `_score`
    pads it, and the uint8 pixels' placement."""
    import jax

    from mgbench.frameworks.keras import data
    from mgbench.frameworks.keras_jax.adapter import JaxDataParallelAdapter

    adapter = JaxDataParallelAdapter(STRATEGIES["keras-jax"])
    adapter.accept(config.with_changes(device_kind="cpu", decode="cpu"))
    adapter.staged = staged
    adapter.mesh = adapter.parallel.mesh(jax.devices("cpu")[:2])
    adapter.normalise = jax.jit(partial(data.normalised, channels_last=True))
    adapter.place = adapter._loader_placement(real.site)
    train = [(np.asarray(images), np.asarray(labels)) for images, labels in adapter._fed(real.train(Shard(0, 4), 0))]
    val, placed = [], {}
    for batch in real.evaluation("val", 0, 1, 4):
        pixels = adapter.place.pixels(batch, padded_to=4)
        placed = {
            "dtype": str(pixels.dtype),
            "shape": list(pixels.shape),
            "shards": {str(s.device): [s.index[0].start, s.index[0].stop] for s in pixels.addressable_shards},
        }
        images = np.asarray(adapter.normalise(pixels))
        val.append((images[: len(batch[-1])], batch[-1]))
    return train, val, adapter.place.decoder, placed


def memory_under(array: np.ndarray) -> object:
    """What holds `array`'s bytes: the first base that is not an array (a buffer's exporter)."""
    while isinstance(array, np.ndarray):
        array = array.base
    return array.obj if isinstance(array, memoryview) else array


def main(framework: str, folder: str, out: str) -> None:
    by_decode = configs(framework, folder)
    os.environ.update(framework_spec(framework).variables_for(by_decode["cpu"].with_changes(device_kind="cpu")))
    from mgbench.frameworks.keras.data import FileBytes, HostPixels, RealData

    dataset = describe_dataset(by_decode["gpu"].job.dataset)
    feeds = keras_jax_feeds if framework == "keras-jax" else keras_torch_feeds
    arrays, found = {}, {}
    for decode, config in by_decode.items():
        real = RealData(dataset, config, workers=1)
        found[f"{decode}_loading"] = type(real.loading).__name__
        train, val, decoder, placed = feeds(config, real, staged=decode == "gpu")
        found[f"{decode}_decoder"], found[f"{decode}_placed"] = decoder, placed
        for split, batches in (("train", train), ("val", val)):
            for step, (images, labels) in enumerate(batches):
                arrays[f"{decode}-{split}-{step}-images"] = images
                arrays[f"{decode}-{split}-{step}-labels"] = labels
    # The raw hand-over: the files' bytes, nothing decoded.
    batches = RealData(dataset, by_decode["gpu"], workers=1).train(Shard(0, 2), 0)
    data_, lengths, windows, targets = next(batches)
    batches.close()
    found["encoded"] = [str(data_.dtype), int(lengths.sum()) == len(data_), list(windows.shape), len(targets)]
    found["encoded_mapped"] = isinstance(memory_under(data_), mmap.mmap)
    assert (found["gpu_loading"], found["cpu_loading"]) == (FileBytes.__name__, HostPixels.__name__)
    np.savez(out, **arrays)
    print(json.dumps(found))


if __name__ == "__main__":
    main(*sys.argv[1:])
