"""`--decode gpu` for keras-jax. JAX has no JPEG decoder, so torchvision decodes the global batch
(nvJPEG) on the first of the GPUs JAX trains on, PyTorch's device crop (`pytorch/device_crop.py`)
crops and flips it there, and each device's share of the uint8 NHWC pixels is handed to JAX by
DLPack: on the decoding GPU a view, not a copy; on each other GPU a device-to-device copy of its
crops. The global array is assembled from the devices' arrays, and the adapter normalises it as
it normalises host-decoded pixels, in one compiled function.

One GPU decodes for all because torchvision keeps one nvJPEG decoder per process, bound to one
device and built anew whenever a call names another (`decode_jpegs_cuda.cpp`): PyTorch's one
process per device never switches, but one process decoding each share on its own device would
rebuild the decoder on every call. The decoding queues its work on a CUDA stream of its own and
waits for it before handing the pixels over, since JAX reads them from streams of its own that do
not wait on torch's. That stream has a high priority: JAX's step cannot be put above the decode
as PyTorch's is (`DecodedAhead`), and at the step's priority each crop kernel would wait for SMs
behind the step's kernels, which the placing thread waits out. The placement runs where the
adapter places batches: staged, on the thread that places them ahead of the step, never the
training thread.

Imports torch: the adapter imports this module only when its loader hands over files.
"""

from __future__ import annotations

import jax
import torch

from mgbench.datasets.encoded import EncodedArrays, padded_items
from mgbench.frameworks.keras_jax.spec import HANDED_TO_JAX
from mgbench.frameworks.pytorch.device_decode import decoded_crops
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


class DecodedByTorch:
    """Places batches of files (`encoded.collated`) as uint8 NHWC pixels of `crop` px sharded like
    `sharding`, decoded and cropped on its first device."""

    priority = -1
    """The decoding stream's CUDA priority (lower is higher; JAX's streams have the default, 0)."""

    def __init__(self, sharding: jax.sharding.NamedSharding, crop: int):
        self.sharding, self.crop = sharding, crop
        first = min(sharding.addressable_devices, key=lambda device: device.id)
        self.device = torch_device(first)
        self.stream = torch.cuda.Stream(self.device, priority=self.priority) if self.device.type == "cuda" else None

    @property
    def decoder(self) -> str:
        others = {str(torch_device(device)) for device in self.sharding.addressable_devices} - {str(self.device)}
        copied = f", shares copied to {', '.join(sorted(others))}" if others else ""
        return f"{NVJPEG} on {self.device}, crop on device{copied}, {HANDED_TO_JAX}"

    def pixels(self, batch: EncodedArrays, padded_to: int | None = None) -> jax.Array:
        """The batch's pixels as one global array; with `padded_to`, its last image repeated up to
        that many so that a short batch shards evenly."""
        if padded_to is not None:
            batch = padded_items(batch, padded_to)
        data, lengths, windows, _ = batch
        shape = (len(lengths), self.crop, self.crop, 3)
        rows = self.sharding.addressable_devices_indices_map(shape)
        with torch.cuda.stream(self.stream):
            crops = decoded_crops(
                torch.from_numpy(data), torch.from_numpy(lengths), torch.from_numpy(windows), self.device, self.crop
            )
            pixels = crops.permute(0, 2, 3, 1).contiguous()
            shares = {device: pixels[index[0]].to(torch_device(device)) for device, index in rows.items()}
            finished(self.stream)
            arrays = [exported(share, device) for device, share in shares.items()]
        return jax.make_array_from_single_device_arrays(shape, self.sharding, arrays)
