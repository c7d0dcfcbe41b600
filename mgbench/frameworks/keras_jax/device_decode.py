"""`--decode gpu` for keras-jax. JAX has no JPEG decoder, so the GPU that holds each device's
share of the batch decodes it with torchvision (nvJPEG), crops and flips it with PyTorch's
device crop (`pytorch/device_crop.py`), and hands the uint8 NHWC pixels to JAX by DLPack, which
on that GPU is a view, not a copy. The global batch is assembled from the devices' arrays, and
the adapter normalises it as it normalises host-decoded pixels, in one compiled function.

The devices' shares decode side by side, one thread each, each on a CUDA stream of its own;
each thread waits for its stream before handing the pixels over, since JAX reads them from
streams of its own that do not wait on torch's. The placement runs where the adapter places
batches: staged, on the thread that places them ahead of the step, never the training thread.

Imports torch: the adapter imports this module only when its loader hands over files.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import jax
import torch
from torchvision.io import ImageReadMode, decode_jpeg

from mgbench.datasets.encoded import EncodedArrays, encoded_items, padded_items
from mgbench.frameworks.keras_jax.spec import HANDED_TO_JAX
from mgbench.frameworks.pytorch.device_crop import cropped
from mgbench.frameworks.pytorch.device_decode import settled
from mgbench.frameworks.pytorch.spec import NVJPEG


def torch_device(device: jax.Device) -> torch.device:
    """The torch device that is JAX's `device`: the GPU of its local id; the CPU for host devices
    (every JAX host device is torch's one CPU, so DLPack copies onto any but the first)."""
    return torch.device("cuda", device.local_hardware_id) if device.platform == "gpu" else torch.device("cpu")


def finished(stream: torch.cuda.Stream | None) -> None:
    """Waits, on this thread, for the work queued on `stream` (none: the CPU, done already)."""
    if stream is not None:
        done = torch.cuda.Event()
        done.record(stream)
        done.synchronize()


class DecodedByTorch:
    """Places batches of files (`encoded.collated`) as uint8 NHWC pixels of `crop` px sharded like
    `sharding`, each device's rows decoded and cropped on that device."""

    def __init__(self, sharding: jax.sharding.NamedSharding, crop: int):
        self.sharding, self.crop = sharding, crop
        devices = sorted(sharding.addressable_devices, key=lambda device: device.id)
        self.streams = {
            device: torch.cuda.Stream(torch_device(device)) if device.platform == "gpu" else None for device in devices
        }
        self.pool = ThreadPoolExecutor(len(devices), thread_name_prefix="mgbench-decode")

    @property
    def decoder(self) -> str:
        names = ", ".join(dict.fromkeys(str(torch_device(device)) for device in self.streams))
        return f"{NVJPEG} on {names}, crop on device, {HANDED_TO_JAX}"

    def pixels(self, batch: EncodedArrays, padded_to: int | None = None) -> jax.Array:
        """The batch's pixels as one global array; with `padded_to`, its last image repeated up to
        that many so that a short batch shards evenly."""
        if padded_to is not None:
            batch = padded_items(batch, padded_to)
        shape = (len(batch[1]), self.crop, self.crop, 3)
        rows = self.sharding.addressable_devices_indices_map(shape)
        shares = [(device, encoded_items(batch, *rows[device][0].indices(shape[0])[:2])) for device in rows]
        arrays = list(self.pool.map(lambda share: self._decoded(*share), shares))
        return jax.make_array_from_single_device_arrays(shape, self.sharding, arrays)

    def _decoded(self, device: jax.Device, share: EncodedArrays) -> jax.Array:
        """One device's share decoded, cropped and flipped there, as a JAX array on that device."""
        data, lengths, windows, _ = share
        place, stream = torch_device(device), self.streams[device]
        with torch.cuda.stream(stream):
            settled(place)
            files = list(torch.split(torch.from_numpy(data), lengths.tolist()))
            images = decode_jpeg(files, mode=ImageReadMode.RGB, device=place)
            pixels = cropped(images, torch.from_numpy(windows), self.crop).permute(0, 2, 3, 1).contiguous()
            finished(stream)
            return jax.dlpack.from_dlpack(pixels, device=device)
