"""The device finish of every real-data path: uint8 NCHW pixels to the model's float input, as
`augment.normalise` computes it on the host (scaled to [0, 1], ImageNet mean and deviation)."""

from __future__ import annotations

import functools

import numpy as np
import torch

from mgbench.datasets.augment import IMAGENET_MEAN, IMAGENET_STD


@functools.cache
def _imagenet_affine(device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """The normalisation as one multiply-add per channel, (1, 3, 1, 1) float32 on `device`, made
    once per device: scale 1 / (255 std) and shift -mean / std, computed in float64."""
    mean, std = np.asarray(IMAGENET_MEAN, dtype=np.float64), np.asarray(IMAGENET_STD, dtype=np.float64)
    return tuple(
        torch.as_tensor(value, dtype=torch.float32, device=device).view(1, 3, 1, 1)
        for value in (1.0 / (255.0 * std), -mean / std)
    )


def normalised_pixels(pixels: torch.Tensor, channels_last: bool) -> torch.Tensor:
    """(N, 3, H, W) uint8 on its device as float32 in the model's memory format: the host's
    ((pixels / 255) - mean) / std as one multiply-add per channel, within a few units in the last
    place of float32 of the host's three operations. One kernel reads the pixels and writes the
    floats in the model's layout, where the host's order took a conversion and three passes over
    float32 pixels, beside the step on a GPU that decodes."""
    scale, shift = _imagenet_affine(pixels.device)
    layout = torch.channels_last if channels_last else torch.contiguous_format
    floats = torch.empty(pixels.shape, dtype=torch.float32, device=pixels.device, memory_format=layout)
    return torch.addcmul(shift, pixels, scale, out=floats)
