"""The JPEG decoders `--decode gpu` runs on the training device, as torch tensors.

Two libraries decode a batch of JPEGs on an NVIDIA GPU, with different engines:

- nvImageCodec drives the GPU's hardware JPEG decoders (the NVJPG engines of A100, H100, H200)
  where the GPU has them, and its CUDA decoder elsewhere. The engines are beside the SMs, so the
  decode takes nothing from the training step it runs beside; it writes into images this decoder
  keeps and reuses, so no batch allocates or frees device memory.
- torchvision's `decode_jpeg` runs nvJPEG's CUDA decoder on the SMs the step computes on.

`jpeg_decoder` takes the first that is installed. Both give each image as (3, H, W) uint8 RGB on
the device, on the caller's current stream, with the pixels Pillow gives on the host within the
decoders' rounding (nvImageCodec's CPU backend, which the tests run, gives Pillow's exactly).
"""

from __future__ import annotations

import importlib.util
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

import numpy as np
import torch

from mgbench.frameworks.pytorch.spec import NVIMGCODEC, TORCHVISION_NVJPEG


class JpegDecoder(Protocol):
    """Decodes a batch of JPEG files, end to end in one host tensor, on one device."""

    name: str
    """What decodes, as rows name it."""

    def __call__(self, data: torch.Tensor, lengths: torch.Tensor) -> list[torch.Tensor]:
        """The files in `data` (uint8, host), split by `lengths`, as (3, H, W) uint8 RGB images on
        the decoder's device, ready in the order of the caller's current stream."""
        ...


def split_files(data: torch.Tensor, lengths: torch.Tensor) -> list[torch.Tensor]:
    """The files end to end in `data`, one tensor each (views, no copy)."""
    return list(torch.split(data, lengths.tolist()))


class TorchvisionDecoder:
    """torchvision's `decode_jpeg` on `device`: nvJPEG's CUDA decoder on a GPU, libjpeg on the CPU."""

    name = TORCHVISION_NVJPEG

    def __init__(self, device: torch.device):
        self.device = device

    def __call__(self, data: torch.Tensor, lengths: torch.Tensor) -> list[torch.Tensor]:
        from torchvision.io import ImageReadMode, decode_jpeg

        if self.device.type == "cuda":
            # The CUDA decoder writes its outputs from a stream of its own that does not wait on
            # the caller's, so a block the caching allocator hands it may still be read by queued
            # kernels (pytorch/vision#9606): wait for those first.
            torch.cuda.current_stream(self.device).synchronize()
        return decode_jpeg(split_files(data, lengths), mode=ImageReadMode.RGB, device=self.device)


class NvImageCodecDecoder:
    """nvImageCodec's batched decode on `device`: the hardware engines first where the GPU has
    them (each image they cannot take falls to the CUDA decoder), on the caller's stream; its CPU
    backend on the CPU.

    A batch is split into `parts`, decoded at once by as many decoders on as many threads.
    nvJPEG's hardware decode waits, image by image, for a copy and a colour-conversion kernel on a
    stream of its own at the default priority; beside a compiled step, whose kernels fill the GPU,
    each such wait lasts until the step's running kernel drains, so one decoder's batch takes longer
    than the step it feeds. Parts shorten that chain by their number; the engines and the copies
    they wait on are not the step's SMs.

    Each part keeps the images of the batches it decoded last and decodes into them again (their
    buffers grow when an image is larger): a batch then neither allocates nor frees device memory,
    whose `cudaFree` would wait for the whole device. A caller reads a batch's images before it
    asks for the batch `keep` after it (`cropped` copies them out; the decode of a later batch is
    queued behind that read on the same stream)."""

    keep = 2
    """Batches whose images are kept for reuse, in turn."""

    GPU_BACKENDS = ("HW_GPU_ONLY", "GPU_ONLY")
    """nvImageCodec's backend kinds on a GPU, in the order they are tried: the hardware decoder,
    then the CUDA one."""

    def __init__(self, device: torch.device, backends: tuple[str, ...] | None = None, parts: int = 4, threads: int = 2):
        from nvidia import nvimgcodec

        self.codec = nvimgcodec
        self.device = device
        kinds = backends or (self.GPU_BACKENDS if device.type == "cuda" else ("CPU_ONLY",))
        device_id = (device.index or 0) if device.type == "cuda" else nvimgcodec.NVIMGCODEC_DEVICE_CPU_ONLY
        self.decoders = [
            nvimgcodec.Decoder(
                device_id=device_id,
                max_num_cpu_threads=threads,
                backends=[nvimgcodec.Backend(getattr(nvimgcodec, kind)) for kind in kinds],
            )
            for _ in range(parts)
        ]
        self.pool = ThreadPoolExecutor(parts, thread_name_prefix="nvimgcodec") if parts > 1 else None
        self.name = f"{NVIMGCODEC} ({', '.join(kinds)}; {parts} at once)"
        # Pillow on the host leaves EXIF orientation alone, as does torchvision's decoder.
        self.params = nvimgcodec.DecodeParams(apply_exif_orientation=False, sample_format=nvimgcodec.P_RGB)
        self.kept: list[list[list[object] | None]] = [[None] * parts for _ in range(self.keep)]
        self.turn = 0

    def __call__(self, data: torch.Tensor, lengths: torch.Tensor) -> list[torch.Tensor]:
        files = [self.codec.CodeStream(file.numpy()) for file in split_files(data, lengths)]
        chunks = [list(chunk) for chunk in np.array_split(np.arange(len(files)), len(self.decoders))]
        stream = torch.cuda.current_stream(self.device).cuda_stream if self.device.type == "cuda" else 0
        kept = self.kept[self.turn]

        def decoded(part: int) -> list[object]:
            sources = [files[index] for index in chunks[part]]
            reuse = kept[part] if kept[part] is not None and len(kept[part]) == len(sources) else None
            return self.decoders[part].decode(sources, images=reuse, params=self.params, cuda_stream=stream)

        parts = range(len(self.decoders))
        decoded_parts = list(self.pool.map(decoded, parts) if self.pool else map(decoded, parts))
        self.kept[self.turn] = decoded_parts
        self.turn = (self.turn + 1) % self.keep
        images = [image for part in decoded_parts for image in part]
        failed = [index for index, image in enumerate(images) if image is None]
        if failed:
            raise ValueError(f"{self.name} could not decode {len(failed)} of {len(files)} images (first: #{failed[0]})")
        return [self.as_tensor(image) for image in images]

    def as_tensor(self, image: object) -> torch.Tensor:
        """The image as a torch tensor over its buffer (no copy): by DLPack on the device, through
        NumPy on the host (nvImageCodec's DLPack export asks for CUDA even for host images)."""
        if self.device.type == "cuda":
            return torch.from_dlpack(image)
        return torch.from_numpy(np.asarray(image))


def nvimgcodec_installed() -> bool:
    """Whether nvImageCodec's Python package is importable (without importing it)."""
    try:
        return importlib.util.find_spec("nvidia.nvimgcodec") is not None
    except ModuleNotFoundError:
        return False


def jpeg_decoder(device: torch.device) -> JpegDecoder:
    """nvImageCodec where it is installed and `device` is a GPU, else torchvision's decoder."""
    if device.type == "cuda" and nvimgcodec_installed():
        return NvImageCodecDecoder(device)
    return TorchvisionDecoder(device)
