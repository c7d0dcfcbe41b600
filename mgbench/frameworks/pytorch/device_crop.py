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

The work is split in two. The host's share (`crop_plan`: where each window's pixels lie in the
batch, each output pixel's filter taps and weights) is numpy over the batch's boxes and sizes: the
loader's workers compute it beside the file reads (`device_decode.PlannedCollate`), off the
training process. The device's share (`planned_crops`) is a few dozen calls a batch whatever its
size: each call from the decoding thread can take the interpreter's lock from the threads that
launch the training step, whose host then falls behind its device.

Framework-neutral over torch tensors: any device torch runs on (tests run it on the CPU).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import torch


def filter_taps(lengths: np.ndarray, out: int) -> int:
    """The most source pixels one output pixel reads when boxes of these `lengths` are resized to
    `out` pixels: the filter reaches its support (the scale, at least one pixel) either side.
    Computed on the host from the boxes, so weighing them waits for nothing on the device."""
    return math.ceil(2 * max(lengths.max() / out, 1.0)) + 1


CENTRE = 128
"""Pixels are resized as level - 128: the passes' weights sum to one, so the shift passes through
them unchanged, and float16 holds -128..127 at twice the precision of 0..255."""


def rounded(raised: torch.Tensor) -> torch.Tensor:
    """Pillow's `clip8` on centred levels raised by a half, in place: the floor is the nearest
    level, halves up. Its clip to 0-255 never binds for the bilinear filter, whose weights are
    non-negative and sum to one: a pass's outputs stay within its inputs' levels (float16's
    rounding of the weights moves them by far less than the half a level left to either end), so
    no pass over the batch clips them."""
    return raised.floor_()


def source_spans(starts: np.ndarray, ends: np.ndarray, out: int, sizes: np.ndarray) -> np.ndarray:
    """(2, N) int64: the source pixels [first, last) each box [starts, ends) reads along one axis,
    the box and the filter's reach beyond it (one output pixel's scale, at least one pixel), within
    its image of `sizes` pixels."""
    reach = np.maximum((ends - starts) / out, 1.0) + 1.0
    first, last = np.maximum(0, np.floor(starts - reach)), np.minimum(sizes, np.ceil(ends + reach))
    return np.stack([first, last]).astype(np.int64)


ALIGNMENT = 8
"""Gathered sources are padded to a multiple of this many pixels along each axis: the products'
operands then have rows aligned for the tensor-core kernels, which unaligned rows fall back from."""


def aligned(size: int) -> int:
    """`size` rounded up to a multiple of `ALIGNMENT`."""
    return -(-size // ALIGNMENT) * ALIGNMENT


def resize_bands(
    starts: np.ndarray, ends: np.ndarray, sizes: np.ndarray, out: int, flips: np.ndarray, taps: int
) -> tuple[np.ndarray, np.ndarray]:
    """(pixels, weights), each (taps, N, out): for image n, the source pixels output pixel i reads
    and their weights when [starts[n], ends[n]) of its `sizes[n]` pixels along one axis is resized
    to `out` pixels with Pillow's BILINEAR filter (Resample.c's `precompute_coeffs`), the outputs
    in reverse order where `flips[n]`; `taps` covers the widest filter (`filter_taps`). A tap
    outside the image weighs nothing and may point anywhere.

    Pillow's weight is max(0, 1 - d / support) over the distance d from the output pixel's centre,
    normalised over the pixels inside the image: nonzero only within `support` of the centre, so
    each output's band of taps is all the matrix products need (`band_matrices`). The centres are
    float64 as Pillow's; the bands float32 (the products' weights are float16 on CUDA), tap-major,
    so that each pass over them is a plain one and their sum adds whole planes."""
    scale = (ends - starts) / out
    support = np.maximum(scale, 1.0)[:, None]
    steps = np.arange(out) + 0.5
    centres = starts[:, None] + np.where(flips[:, None], out - steps, steps) * scale[:, None]
    first = np.floor(centres - support + 0.5)
    tap = np.arange(taps, dtype=np.float32)[:, None, None]
    # Tap t of output i lies (first + t + 0.5 - centre) / support supports from the centre.
    weights = ((first + 0.5 - centres) / support).astype(np.float32) + tap * (1.0 / support).astype(np.float32)
    np.abs(weights, out=weights)
    np.subtract(1.0, weights, out=weights)
    np.maximum(weights, 0.0, out=weights)
    # Inside the image where 0 <= first + t < size.
    weights *= (tap >= (-first).astype(np.float32)) & (tap < (sizes[:, None] - first).astype(np.float32))
    weights /= weights.sum(axis=0)
    return first.astype(np.int64) + np.arange(taps)[:, None, None], weights


class CropPlan(NamedTuple):
    """The host's share of cropping a batch of N images to `crop` px (`crop_plan`), as numpy
    arrays or as the host tensors a loader hands over."""

    shapes: np.ndarray | torch.Tensor
    """(N, 3) int64: channels, height and width each image decodes to."""
    span: np.ndarray | torch.Tensor
    """(2,) int64: the gathered batch's height and width (`gathered`)."""
    offsets: np.ndarray | torch.Tensor
    """(N, height, 3) int64: the gather's offsets (`gathered`)."""
    taps: np.ndarray | torch.Tensor
    """(taps, 2N, crop) int64: each output pixel's source pixels within its span, columns of every
    image then rows (`resize_bands`), clamped into the larger of the span's sides."""
    weights: np.ndarray | torch.Tensor
    """(taps, 2N, crop) float32: their weights."""


def crop_plan(shapes: np.ndarray, windows: np.ndarray, crop: int) -> CropPlan:
    """The plan for images of `shapes` (N, 3: channels, height, width) and their `windows` (N, 5:
    left, top, right, bottom in the image's pixels, then 1 for a flip, as `Window.as_array` and the
    loaders stack them), each resized to crop x crop and flipped as its window says. Each box is
    taken relative to the span of pixels its filter reads (`source_spans`); rows are never
    flipped."""
    left, top, right, bottom, flip = np.asarray(windows, dtype=np.float64).T
    xs = source_spans(left, right, crop, shapes[:, 2])
    ys = source_spans(top, bottom, crop, shapes[:, 1])
    span = np.array([aligned(int((ys[1] - ys[0]).max())), aligned(int((xs[1] - xs[0]).max()))])
    taps, weights = resize_bands(
        np.concatenate([left - xs[0], top - ys[0]]),
        np.concatenate([right - xs[0], bottom - ys[0]]),
        np.concatenate([xs[1] - xs[0], ys[1] - ys[0]]),
        crop,
        np.concatenate([flip > 0.5, np.zeros(len(flip), dtype=bool)]),
        max(filter_taps(right - left, crop), filter_taps(bottom - top, crop)),
    )
    return CropPlan(shapes, span, gather_offsets(shapes, xs, ys, span), np.clip(taps, 0, span.max() - 1), weights)


def gather_offsets(shapes: np.ndarray, xs: np.ndarray, ys: np.ndarray, span: np.ndarray) -> np.ndarray:
    """(N, height, 3) int64, for images of `shapes` flattened end to end: the offset of image n's
    row y + ys[0, n] of channel c from column xs[0, n] on, for y below the span's `height` (its
    first `span`); rows past an image's span repeat its last row, and one channel is repeated into
    three by a channel stride of 0."""
    channels, rows, columns = shapes.T
    sizes = channels * rows * columns
    first = np.cumsum(sizes) - sizes + ys[0] * columns + xs[0]
    lines = np.minimum(np.arange(span[0]), (ys[1] - ys[0])[:, None] - 1)
    planes = np.where(channels == 3, rows * columns, 0)[:, None, None] * np.arange(3)
    return (first[:, None] + lines * columns[:, None])[:, :, None] + planes


def gathered(images: list[torch.Tensor], offsets: torch.Tensor, width: int) -> torch.Tensor:
    """(N, height, 3, width) uint8 on the images' device, each row's channels side by side: the
    `width` pixels from each of the `offsets` (`gather_offsets`, on that device) of the images
    flattened end to end. Beyond its span, an image's columns are whatever lies next in memory:
    the resize gives them no weight.

    The images are flattened in one call, and each (image, row, channel) of the result is one
    window of `width` consecutive elements of that buffer: the gather selects the windows (a view,
    `unfold`) by one offset per row. A batch is a few kernels however many images it has, where a
    copy per image would queue one kernel and take the interpreter's lock once per image.
    `index_select` copies each window as a row, where indexing the view by the (N, height, 3)
    offsets computes a source address per pixel: the same pixels for less of the GPU's time
    beside the step (benchmarks/RUNS.md, run bw)."""
    # The last row's window may reach `width` elements past the last image.
    flat = torch._utils._flatten_dense_tensors([*images, images[0].new_zeros(width)])
    return torch.index_select(flat.unfold(0, width, 1), 0, offsets.flatten()).view(*offsets.shape, width)


def band_matrices(taps: torch.Tensor, weights: torch.Tensor, span: int) -> torch.Tensor:
    """(M, out, span): `resize_bands`' taps (taps, M, out) added into a zeroed matrix, on their
    device, in the weights' dtype; written once, where weighing every (output, pixel) pair would
    pass over the matrix several times."""
    matrix = torch.zeros((*weights.shape[1:], span), dtype=weights.dtype, device=weights.device)
    return matrix.scatter_add_(2, taps.permute(1, 2, 0), weights.permute(1, 2, 0))


def planned_crops(
    images: list[torch.Tensor], plan: CropPlan, crop: int, dtype: torch.dtype | None = None
) -> torch.Tensor:
    """(N, 3, crop, crop) uint8 on the images' device (a view of (N, crop, 3, crop) memory): the
    CHW uint8 images (one channel is repeated into three) cropped as `plan` says, its arrays host
    tensors (pinned ones are copied without waiting). The plan must be of these images' shapes.

    The pixels each window reads are gathered into one batch (`gathered`), so both passes run as
    one batched product each whatever the images' sizes. `dtype` is what the products run in:
    float16 on CUDA (tensor cores: the step the decode shares the GPU with loses the least), float32
    elsewhere. Levels are exact in float16 and each pass rounds to a level, so float16's precision
    moves a pixel by a level only where a product lands within a few hundredths of a half
    (`CENTRE`)."""
    shapes = image_shapes(images)
    if not np.array_equal(shapes, np.asarray(plan.shapes)):
        raise ValueError(
            f"a crop plan for images of other sizes: {np.asarray(plan.shapes).tolist()} for {shapes.tolist()}"
        )
    return crops_as_planned(images, plan, crop, dtype)


def image_shapes(images: list[torch.Tensor]) -> np.ndarray:
    """(N, 3) int64: each image's channels, height and width."""
    return np.array([image.shape for image in images], dtype=np.int64)


def crops_as_planned(
    images: list[torch.Tensor], plan: CropPlan, crop: int, dtype: torch.dtype | None = None
) -> torch.Tensor:
    """`planned_crops` for a plan known to be of these images' shapes."""
    device = images[0].device
    dtype = dtype or (torch.float16 if device.type == "cuda" else torch.float32)
    height, width = np.asarray(plan.span).tolist()
    offsets, taps = (torch.as_tensor(part).to(device, non_blocking=True) for part in (plan.offsets, plan.taps))
    # Copied as they are and converted there: a conversion on the way would copy from pageable memory.
    weights = torch.as_tensor(plan.weights).to(device, non_blocking=True).to(dtype)
    # Converted, centred and raised by a half in one pass (computed in float32, stored in `dtype`):
    # the weights sum to one, so the first pass's products come out raised for `rounded`.
    pixels = gathered(images, offsets, width)
    sources = torch.sub(pixels, CENTRE - 0.5, out=torch.empty(pixels.shape, dtype=dtype, device=device))
    count = len(images)
    matrices = band_matrices(taps, weights, max(width, height))
    x_weights, y_weights = matrices[:count, :, :width], matrices[count:, :, :height]
    # Each pass one batched product per image, its channels side by side (no weights repeated
    # per channel): (rows x channels, width) @ (width, crop), then (crop, rows) @ (rows, channels x crop).
    rows = rounded(torch.bmm(sources.view(count, height * 3, width), x_weights.transpose(1, 2)))
    resized = rounded(torch.bmm(y_weights, rows.view(count, height, 3 * crop)).add_(0.5))
    return resized.add_(CENTRE).to(torch.uint8).view(count, crop, 3, crop).permute(0, 2, 1, 3)


def cropped(
    images: list[torch.Tensor], windows: torch.Tensor, crop: int, dtype: torch.dtype | None = None
) -> torch.Tensor:
    """`planned_crops` of the images with a plan made here from their shapes and their `windows`
    ((N, 5) on the host, `crop_plan`): for callers whose loader hands over no plan."""
    return crops_as_planned(images, crop_plan(image_shapes(images), windows.numpy(), crop), crop, dtype)
