"""The device finish of every real-data path: uint8 NCHW pixels to the model's float input, as
`augment.normalise` computes it on the host (scaled to [0, 1], ImageNet mean and deviation)."""

from __future__ import annotations

import functools

import torch

from mgbench.datasets.augment import IMAGENET_MEAN, IMAGENET_STD


@functools.cache
def _imagenet_statistics(device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and standard deviation as (1, 3, 1, 1) tensors, made once per device."""
    return tuple(torch.as_tensor(v, device=device).view(1, 3, 1, 1) for v in (IMAGENET_MEAN, IMAGENET_STD))


def normalised_pixels(pixels: torch.Tensor, channels_last: bool) -> torch.Tensor:
    """(N, 3, H, W) uint8 on its device as float32 in the model's memory format."""
    mean, std = _imagenet_statistics(pixels.device)
    layout = torch.channels_last if channels_last else torch.contiguous_format
    # The host's operations in its order, in place on one float copy made in the model's layout:
    # one pass over float32 pixels fewer than a new tensor per operation and a copy to the layout.
    return pixels.to(torch.float32, memory_format=layout).div_(255.0).sub_(mean).div_(std)
