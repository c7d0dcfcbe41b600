"""The device half of `--decode gpu`: decoded images cropped, resized and flipped where they lie.

The host drew each image's `augment.Window` from its header; here the window is resized to
crop x crop as Pillow's `resize(box=..., resample=BILINEAR)` does it on the host, so both paths
give the same pixels within rounding. Pillow's bilinear filter is separable: each output column
is a weighted sum of source columns (a triangle centred on the output pixel's centre mapped into
the box, widened by the scale when reducing, so it averages every source pixel it covers, and
normalised over the pixels inside the image), then each output row of source rows. Both passes
are matrix products with those weights, horizontal first with the 8-bit rounding between them
that Pillow's intermediate image has; a flip reverses the horizontal weights' rows. Plain
`interpolate(antialias=True)` on the window would clamp the filter at the window's edge, where
Pillow reads the pixels beyond it, and cannot take a box at fractional pixels.

Framework-neutral over torch tensors: any device torch runs on (tests run it on the CPU).
"""

from __future__ import annotations

import math

import torch


def bilinear_weights(
    starts: torch.Tensor, ends: torch.Tensor, sizes: torch.Tensor, out: int, span: int
) -> torch.Tensor:
    """(N, out, span) float32: for image n, the weight of source pixel j (j < span) in output pixel
    i when [starts[n], ends[n]) of its `sizes[n]` pixels along one axis is resized to `out` pixels
    with Pillow's BILINEAR filter (Resample.c's `precompute_coeffs`)."""
    scale = (ends - starts) / out
    support = scale.clamp(min=1.0)
    centres = starts[:, None] + (torch.arange(out, device=starts.device) + 0.5) * scale[:, None]
    pixels = torch.arange(span, device=starts.device) + 0.5
    distance = (pixels[None, None, :] - centres[:, :, None]) / support[:, None, None]
    weights = (1.0 - distance.abs()).clamp(min=0.0)
    weights = weights * (pixels[None, None, :] < sizes[:, None, None])
    return (weights / weights.sum(dim=2, keepdim=True)).float()


def rounded(values: torch.Tensor) -> torch.Tensor:
    """Pillow's `clip8`: to the nearest level, halves up, within 0-255."""
    return values.add(0.5).floor_().clamp_(0.0, 255.0)


def source_span(start: float, end: float, out: int, size: int) -> tuple[int, int]:
    """The source pixels [first, last) a box [start, end) reads along one axis: the box and the
    filter's reach beyond it (one output pixel's scale, at least one pixel), within the image."""
    reach = max((end - start) / out, 1.0) + 1.0
    return max(0, math.floor(start - reach)), min(size, math.ceil(end + reach))


def cropped(images: list[torch.Tensor], windows: torch.Tensor, crop: int) -> torch.Tensor:
    """(N, 3, crop, crop) uint8 on the images' device: each CHW uint8 image (one channel is
    repeated into three) resized from its window's box and flipped as the window says.

    `windows` is (N, 5) on the host: left, top, right, bottom in the image's pixels, then 1 for a
    flip (`Window.as_array`, stacked by the loader)."""
    device = images[0].device
    heights = [image.shape[1] for image in images]
    widths = [image.shape[2] for image in images]
    boxes = windows.to(device=device, dtype=torch.float64)
    x_weights = bilinear_weights(boxes[:, 0], boxes[:, 2], torch.tensor(widths, device=device), crop, max(widths))
    y_weights = bilinear_weights(boxes[:, 1], boxes[:, 3], torch.tensor(heights, device=device), crop, max(heights))
    flips = boxes[:, 4] > 0.5
    x_weights = torch.where(flips[:, None, None], x_weights.flip(1), x_weights)
    batch = torch.empty((len(images), 3, crop, crop), dtype=torch.uint8, device=device)
    for n, (image, (left, top, right, bottom, _)) in enumerate(zip(images, windows.tolist())):
        x0, x1 = source_span(left, right, crop, widths[n])
        y0, y1 = source_span(top, bottom, crop, heights[n])
        source = image[:, y0:y1, x0:x1].expand(3, -1, -1).float()
        rows = rounded(source @ x_weights[n, :, x0:x1].T)
        batch[n] = rounded(y_weights[n, :, y0:y1] @ rows)
    return batch
