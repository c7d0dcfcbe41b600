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

Framework-neutral over torch tensors: any device torch runs on (tests run it on the CPU). On
CUDA the tensor work is compiled (`compiled_for`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import torch


def bilinear_weights(
    starts: torch.Tensor, ends: torch.Tensor, sizes: torch.Tensor, out: int, span: int, flips: torch.Tensor
) -> torch.Tensor:
    """(N, out, span) float32: for image n, the weight of source pixel j (j < span) in output
    pixel i when [starts[n], ends[n]) of its `sizes[n]` pixels along one axis is resized to `out`
    pixels with Pillow's BILINEAR filter (Resample.c's `precompute_coeffs`), the outputs in reverse
    order where `flips[n]`.

    Pillow's weight is max(0, 1 - d / support) over the distance d from the output pixel's centre
    to the pixel's, normalised over the pixels inside the image. Written as one expression over
    the whole matrix, which the compiled resize computes in one pass as it writes the matrix."""
    device = starts.device
    scale = (ends - starts) / out
    support = scale.clamp(min=1.0)[:, None, None]
    steps = torch.arange(out, device=device) + 0.5
    steps = torch.where(flips[:, None], out - steps, steps)
    centres = (starts[:, None] + steps * scale[:, None])[:, :, None]
    pixels = torch.arange(span, device=device) + 0.5
    weights = (1.0 - (pixels - centres).abs() / support).clamp(min=0.0) * (pixels < sizes[:, None, None])
    return weights / weights.sum(dim=2, keepdim=True)


CENTRE = 128
"""Pixels are resized as level - 128: the passes' weights sum to one, so the shift passes through
them unchanged, and float16 holds -128..127 at twice the precision of 0..255."""


def rounded(raised: torch.Tensor) -> torch.Tensor:
    """Pillow's `clip8` on centred levels raised by a half: the floor is the nearest level, halves
    up, then kept within 0-255."""
    return raised.floor().clamp(-CENTRE, 255 - CENTRE)


def source_span(start: float, end: float, out: int, size: int) -> tuple[int, int]:
    """The source pixels [first, last) a box [start, end) reads along one axis: the box and the
    filter's reach beyond it (one output pixel's scale, at least one pixel), within the image."""
    reach = max((end - start) / out, 1.0) + 1.0
    return max(0, math.floor(start - reach)), min(size, math.ceil(end + reach))


ALIGNMENT = 8
"""Gathered sources are padded to a multiple of this many pixels along each axis: the products'
operands then have rows aligned for the tensor-core kernels, which unaligned rows fall back from."""


def aligned(size: int) -> int:
    """`size` rounded up to a multiple of `ALIGNMENT`."""
    return -(-size // ALIGNMENT) * ALIGNMENT


def gathered(flat: torch.Tensor, spans: torch.Tensor, height: int, width: int) -> torch.Tensor:
    """(N, height, 3, width) uint8: the span of each image in `flat` (the images' pixels end to
    end, `width` more after the last), at the top left, each row's channels side by side. `spans`
    is (N, 4) int64 per image: its span's first element in `flat`, channel stride (0 for one
    channel, repeated into three), row stride, and rows. Beyond its span, an image's rows are its
    span's last row repeated and its columns whatever lies next in memory: the resize gives them
    no weight.

    Each (image, row, channel) of the result is `width` consecutive elements of `flat` from one
    offset per row, computed for the whole batch: the device's work for a batch is the same few
    kernels however many images it has, where a copy per image would queue one kernel per image
    beside the step. Compiled, each pixel's index is computed in the kernel that reads it (and
    converts it), not read from memory."""
    first, channel, row, rows = spans.T[:, :, None]
    ys = torch.minimum(torch.arange(height, device=flat.device), rows - 1)
    offsets = (first + ys * row)[:, :, None] + (torch.arange(3, device=flat.device) * channel)[:, None, :]
    return flat[offsets[..., None] + torch.arange(width, device=flat.device)]


def resized(
    flat: torch.Tensor, spans: torch.Tensor, boxes: torch.Tensor, height: int, width: int, crop: int, dtype: torch.dtype
) -> torch.Tensor:
    """(N, 3, crop, crop) uint8, a view of (N, crop, 3, crop) memory: the spans `gathered` from
    `flat`, resized from their `boxes` ((N, 7) float32: left, right, span width, top, bottom, span
    height relative to the span, then 1 for a flip) with the products in `dtype`.

    The sources are converted, centred and raised by a half in one pass: the weights sum to one,
    so the first pass's products come out raised for `rounded`. Each pass is one batched product
    per image with its channels side by side (no weights repeated per channel): (rows x channels,
    width) @ (width, crop), then (crop, rows) @ (rows, channels x crop)."""
    sources = (gathered(flat, spans, height, width).to(torch.float32) - (CENTRE - 0.5)).to(dtype)
    count = sources.shape[0]
    flips = boxes[:, 6] > 0.5
    x_weights = bilinear_weights(boxes[:, 0], boxes[:, 1], boxes[:, 2], crop, width, flips).to(dtype)
    y_weights = bilinear_weights(boxes[:, 3], boxes[:, 4], boxes[:, 5], crop, height, torch.zeros_like(flips)).to(dtype)
    rows = rounded(torch.bmm(sources.view(count, height * 3, width), x_weights.transpose(1, 2)))
    levels = rounded(torch.bmm(y_weights, rows.view(count, height, 3 * crop)) + 0.5)
    return (levels + CENTRE).to(torch.uint8).view(count, crop, 3, crop).permute(0, 2, 1, 3)


@functools.cache
def _compiled(function: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    return torch.compile(function, dynamic=True)


def compiled_for(function: Callable[..., torch.Tensor], device: torch.device) -> Callable[..., torch.Tensor]:
    """`function` (tensor work on a batch) as it runs on `device`: compiled on CUDA, where its
    operators, each a pass over the batch's pixels on the GPU the step runs on, become a few fused
    kernels (`resized`: the gather with the conversion, each rounding with what follows it, beside
    the products), compiled once for every batch's sizes (dynamic shapes). Elsewhere (the tests'
    CPU) as written."""
    return _compiled(function) if device.type == "cuda" else function


def cropped(
    images: list[torch.Tensor], windows: torch.Tensor, crop: int, dtype: torch.dtype | None = None
) -> torch.Tensor:
    """(N, 3, crop, crop) uint8 on the images' device (a view of (N, crop, 3, crop) memory): each
    CHW uint8 image (one channel is repeated into three) resized from its window's box and flipped
    as the window says.

    `windows` is (N, 5) on the host: left, top, right, bottom in the image's pixels, then 1 for a
    flip (`Window.as_array`, stacked by the loader). The pixels each window reads (its source
    span) are gathered into one batch padded to the largest span, so both passes run as one
    batched product each whatever the images' sizes; the spans and the boxes within them are
    computed here, on the host, and reach the device as one small copy each.

    `dtype` is what the products run in: float16 on CUDA (tensor cores: the step the decode shares
    the GPU with loses the least), float32 elsewhere. Levels are exact in float16 and each pass
    rounds to a level, so float16's precision moves a pixel by a level only where a product lands
    within a few hundredths of a half (`CENTRE`)."""
    device = images[0].device
    dtype = dtype or (torch.float16 if device.type == "cuda" else torch.float32)
    boxes = windows.tolist()
    spans = [
        (source_span(left, right, crop, image.shape[2]), source_span(top, bottom, crop, image.shape[1]))
        for image, (left, top, right, bottom, _) in zip(images, boxes)
    ]
    height = aligned(max(y1 - y0 for _, (y0, y1) in spans))
    width = aligned(max(x1 - x0 for (x0, x1), _ in spans))
    # The last row's window may reach `width` elements past the last image.
    flat = torch.cat([*(image.reshape(-1) for image in images), images[0].new_zeros(width)])
    starts = [0]
    for image in images[:-1]:
        starts.append(starts[-1] + image.numel())
    places = [
        (start + y0 * image.shape[2] + x0, image.shape[1] * image.shape[2] if image.shape[0] == 3 else 0,
         image.shape[2], y1 - y0)
        for start, image, ((x0, _), (y0, y1)) in zip(starts, images, spans)
    ]  # fmt: skip
    relative = [
        (left - x0, right - x0, x1 - x0, top - y0, bottom - y0, y1 - y0, flip)
        for ((x0, x1), (y0, y1)), (left, top, right, bottom, flip) in zip(spans, boxes)
    ]
    return compiled_for(resized, device)(
        flat,
        torch.tensor(places, dtype=torch.int64).to(device),
        torch.tensor(relative, dtype=torch.float32).to(device),
        height,
        width,
        crop,
        dtype,
    )
