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

import numpy as np
import torch


def resize_bands(
    starts: np.ndarray, ends: np.ndarray, sizes: np.ndarray, out: int, flips: np.ndarray, taps: int
) -> tuple[np.ndarray, np.ndarray]:
    """(pixels, weights), each (N, out, taps): for image n, the source pixels output pixel i reads
    and their weights when [starts[n], ends[n]) of its `sizes[n]` pixels along one axis is resized
    to `out` pixels with Pillow's BILINEAR filter (Resample.c's `precompute_coeffs`, in float64 as
    Pillow's), the outputs in reverse order where `flips[n]`; `taps` covers the widest filter
    (`filter_taps`). A tap outside the image weighs nothing and may point anywhere.

    Pillow's weight is max(0, 1 - d / support) over the distance d from the output pixel's centre,
    normalised over the pixels inside the image: nonzero only within `support` of the centre, so
    each output's band of taps is all the matrix products need (`band_matrices`). Computed on the
    host from the boxes: on the device these few arrays took some forty operations a batch, each a
    call from the decoding thread that takes the interpreter's lock from the training threads."""
    scale = (ends - starts) / out
    support = np.maximum(scale, 1.0)
    steps = np.arange(out) + 0.5
    steps = np.where(flips[:, None], out - steps, steps)
    centres = starts[:, None] + steps * scale[:, None]
    pixels = np.floor(centres - support[:, None] + 0.5)[:, :, None] + np.arange(taps)
    weights = np.maximum(1.0 - np.abs(pixels + 0.5 - centres[:, :, None]) / support[:, None, None], 0.0)
    weights *= (pixels >= 0) & (pixels < sizes[:, None, None])
    weights /= weights.sum(axis=2, keepdims=True)
    return pixels.astype(np.int64), weights


def band_matrices(pixels: torch.Tensor, weights: torch.Tensor, span: int) -> torch.Tensor:
    """(N, out, span): `resize_bands`' taps added into a zeroed matrix, on their device, in the
    weights' dtype (taps outside [0, span) weigh nothing and are clamped into it). Written once,
    where weighing every (output, pixel) pair would pass over the matrix several times."""
    matrix = torch.zeros((*weights.shape[:2], span), dtype=weights.dtype, device=weights.device)
    return matrix.scatter_add_(2, pixels.clamp_(0, span - 1), weights)


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


def gathered(images: list[torch.Tensor], shapes: np.ndarray, xs: np.ndarray, ys: np.ndarray) -> torch.Tensor:
    """(N, height, 3, width) uint8 on the images' device, each row's channels side by side: image
    n's (its `shapes[n]`: channels, height, width) pixels [ys[0, n], ys[1, n]) x [xs[0, n],
    xs[1, n]) at the top left, the largest span's size `aligned`; one channel is repeated into
    three by a channel stride of 0. Beyond its span, an image's rows are its span's last row
    repeated and its columns whatever lies next in memory: the resize gives them no weight.

    The images are flattened end to end in one call, and each (image, row, channel) of the result
    is one window of `width` consecutive elements of that buffer: the gather indexes the windows (a
    view, `unfold`) by one offset per row, computed on the host for the whole batch and copied
    before any of the batch's kernels is queued. The device's work for a batch is a few kernels
    however many images it has, and the decoding thread makes a few calls: a copy or a call per
    image would each take the interpreter's lock from the training threads, and a blocking copy
    behind queued kernels would wait for them."""
    device = images[0].device
    height, width = aligned(int((ys[1] - ys[0]).max())), aligned(int((xs[1] - xs[0]).max()))
    channels, rows, columns = shapes.T
    sizes = channels * rows * columns
    first = np.cumsum(sizes) - sizes + ys[0] * columns + xs[0]
    lines = np.minimum(np.arange(height), (ys[1] - ys[0])[:, None] - 1)
    planes = np.where(channels == 3, rows * columns, 0)[:, None, None] * np.arange(3)
    offsets = torch.from_numpy((first[:, None] + lines * columns[:, None])[:, :, None] + planes).to(device)
    # The last row's window may reach `width` elements past the last image.
    flat = torch._utils._flatten_dense_tensors([*images, images[0].new_zeros(width)])
    return flat.unfold(0, width, 1)[offsets]


def cropped(
    images: list[torch.Tensor], windows: torch.Tensor, crop: int, dtype: torch.dtype | None = None
) -> torch.Tensor:
    """(N, 3, crop, crop) uint8 on the images' device (a view of (N, crop, 3, crop) memory): each
    CHW uint8 image (one channel is repeated into three) resized from its window's box and flipped
    as the window says.

    `windows` is (N, 5) on the host: left, top, right, bottom in the image's pixels, then 1 for a
    flip (`Window.as_array`, stacked by the loader). The pixels each window reads are gathered
    into one batch (`gathered`), so both passes run as one batched product each whatever the
    images' sizes. The host's share (spans, the gather's offsets, the filters' bands) is computed
    with numpy over the batch's arrays at once, and the device's share is a few dozen calls a batch
    however many images it has: each call from the decoding thread can take the interpreter's lock
    from the threads that launch the training step, whose host then falls behind its device.

    `dtype` is what the products run in: float16 on CUDA (tensor cores: the step the decode shares
    the GPU with loses the least), float32 elsewhere. Levels are exact in float16 and each pass
    rounds to a level, so float16's precision moves a pixel by a level only where a product lands
    within a few hundredths of a half (`CENTRE`)."""
    device = images[0].device
    dtype = dtype or (torch.float16 if device.type == "cuda" else torch.float32)
    shapes = np.array([image.shape for image in images], dtype=np.int64)
    left, top, right, bottom, flip = windows.numpy().astype(np.float64).T
    xs = source_spans(left, right, crop, shapes[:, 2])
    ys = source_spans(top, bottom, crop, shapes[:, 1])
    # Both axes' bands in one pair of arrays (each box relative to its span; rows, never flipped,
    # after columns), copied before the gather queues kernels.
    taps = max(filter_taps(right - left, crop), filter_taps(bottom - top, crop))
    pixels, weights = resize_bands(
        np.concatenate([left - xs[0], top - ys[0]]),
        np.concatenate([right - xs[0], bottom - ys[0]]),
        np.concatenate([xs[1] - xs[0], ys[1] - ys[0]]),
        crop,
        np.concatenate([flip > 0.5, np.zeros_like(flip, dtype=bool)]),
        taps,
    )
    pixels, weights = torch.from_numpy(pixels).to(device), torch.from_numpy(weights).to(device, dtype)
    # Converted, centred and raised by a half in one pass (computed in float32, stored in `dtype`):
    # the weights sum to one, so the first pass's products come out raised for `rounded`.
    gather = gathered(images, shapes, xs, ys)
    sources = torch.sub(gather, CENTRE - 0.5, out=torch.empty(gather.shape, dtype=dtype, device=device))
    count, height, _, width = sources.shape
    matrices = band_matrices(pixels, weights, max(width, height))
    x_weights, y_weights = matrices[:count, :, :width], matrices[count:, :, :height]
    # Each pass one batched product per image, its channels side by side (no weights repeated
    # per channel): (rows x channels, width) @ (width, crop), then (crop, rows) @ (rows, channels x crop).
    rows = rounded(torch.bmm(sources.view(count, height * 3, width), x_weights.transpose(1, 2)))
    resized = rounded(torch.bmm(y_weights, rows.view(count, height, 3 * crop)).add_(0.5))
    return resized.add_(CENTRE).to(torch.uint8).view(count, crop, 3, crop).permute(0, 2, 1, 3)
