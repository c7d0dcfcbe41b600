"""`--decode gpu` for keras-jax. JAX has no JPEG decoder, so torchvision decodes the global batch
(nvJPEG) on the first of the GPUs JAX trains on, PyTorch's device crop (`pytorch/device_crop.py`)
crops and flips it there, and each device's share of the uint8 NHWC pixels is handed to JAX by
DLPack: on the decoding GPU a view, not a copy; on each other GPU a device-to-device copy of its
crops. The global array is assembled from the devices' arrays, and the adapter normalises it as
it normalises host-decoded pixels, in one compiled function.

One GPU decodes for all because torchvision keeps one nvJPEG decoder per process, bound to one
device and built anew whenever a call names another (`decode_jpegs_cuda.cpp`): PyTorch's one
process per device never switches, but one process decoding each share on its own device would
rebuild the decoder on every call. The crop queues its work on a CUDA stream of its own and
waits for it before handing the pixels over, since JAX reads them from streams of its own that do
not wait on torch's. That stream has a high priority: JAX's step cannot be put above the decode
as PyTorch's is (`DecodedAhead`), and at the step's priority each crop kernel would wait for SMs
behind the step's kernels, which the placing thread waits out.

Two phases, each on a thread of its own when the adapter stages its input: the decode
(`prepared`: the decoder returns only once its batch is decoded) one batch ahead of the crop and
hand-over (`pixels`, on the thread that places batches ahead of the step), so batch k+1 decodes
while batch k is cropped and handed over; never on the training thread.

Imports torch: the adapter imports this module only when its loader hands over files.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import NamedTuple

import jax
import numpy as np
import torch

from mgbench.common.ahead import Ahead
from mgbench.datasets.encoded import EncodedArrays, padded_items
from mgbench.frameworks.keras_jax.spec import HANDED_TO_JAX
from mgbench.frameworks.pytorch.device_crop import cropped
from mgbench.frameworks.pytorch.device_decode import decoded_images
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


def exported(share: torch.Tensor, device: jax.Device) -> jax.Array:
    """`share` as a JAX array on `device`, by DLPack: torch exports a GPU tensor only while its GPU
    is the current one."""
    with torch.cuda.device(share.device.index if share.is_cuda else -1):
        return jax.dlpack.from_dlpack(share, device=device)


class DecodedBatch(NamedTuple):
    """A batch decoded on the device, not yet cropped: its images (CHW uint8), their windows (N, 5)
    and the loader's targets, last as in the loader's batches."""

    images: list[torch.Tensor]
    windows: torch.Tensor
    targets: np.ndarray


class DecodedByTorch:
    """Places batches of files (`encoded.collated`) as uint8 NHWC pixels of `crop` px sharded like
    `sharding`, decoded and cropped on its first device."""

    priority = -1
    """The decoding streams' CUDA priority (lower is higher; JAX's streams have the default, 0)."""

    def __init__(self, sharding: jax.sharding.NamedSharding, crop: int):
        self.sharding, self.crop = sharding, crop
        first = min(sharding.addressable_devices, key=lambda device: device.id)
        self.device = torch_device(first)
        on_gpu = self.device.type == "cuda"
        self.decode_stream = torch.cuda.Stream(self.device, priority=self.priority) if on_gpu else None
        self.stream = torch.cuda.Stream(self.device, priority=self.priority) if on_gpu else None

    @property
    def decoder(self) -> str:
        others = {str(torch_device(device)) for device in self.sharding.addressable_devices} - {str(self.device)}
        copied = f", shares copied to {', '.join(sorted(others))}" if others else ""
        return f"{NVJPEG} on {self.device}, crop on device{copied}, {HANDED_TO_JAX}"

    def prepared(
        self, batches: Iterable[EncodedArrays], ahead: bool, padded_to: int | None = None
    ) -> Iterator[DecodedBatch]:
        """The batches decoded on the device; `ahead`, on a thread of their own one batch ahead of
        the thread that takes them. With `padded_to`, each batch's last image is repeated up to
        that many so that a short batch shards evenly (its targets stay the loader's)."""
        decoded = (self._decoded(batch, padded_to) for batch in batches)
        return Ahead(decoded, depth=1) if ahead else decoded

    def _decoded(self, batch: EncodedArrays, padded_to: int | None) -> DecodedBatch:
        targets = batch[-1]
        if padded_to is not None:
            batch = padded_items(batch, padded_to)
        data, lengths, windows, _ = batch
        with torch.cuda.stream(self.decode_stream):
            images = decoded_images(torch.from_numpy(data), torch.from_numpy(lengths), self.device)
        return DecodedBatch(images, torch.from_numpy(windows), targets)

    def pixels(self, batch: DecodedBatch) -> jax.Array:
        """The batch's pixels cropped and handed to JAX as one global array. The crop is waited for
        here, before `batch`'s images can be freed: their memory is the decode stream's, which
        would not wait for the crop's before reusing it."""
        shape = (len(batch.images), self.crop, self.crop, 3)
        rows = self.sharding.addressable_devices_indices_map(shape)
        with torch.cuda.stream(self.stream):
            pixels = cropped(batch.images, batch.windows, self.crop).permute(0, 2, 3, 1).contiguous()
            shares = {device: pixels[index[0]].to(torch_device(device)) for device, index in rows.items()}
            finished(self.stream)
            arrays = [exported(share, device) for device, share in shares.items()]
        return jax.make_array_from_single_device_arrays(shape, self.sharding, arrays)
