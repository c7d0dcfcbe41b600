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


def bilinear_weights(
    starts: torch.Tensor,
    ends: torch.Tensor,
    sizes: torch.Tensor,
    out: int,
    span: int,
    flips: torch.Tensor,
    taps: int,
    dtype: torch.dtype,
) -> torch.Tensor:
    """(N, out, span) in `dtype`: for image n, the weight of source pixel j (j < span) in output
    pixel i when [starts[n], ends[n]) of its `sizes[n]` pixels along one axis is resized to `out`
    pixels with Pillow's BILINEAR filter (Resample.c's `precompute_coeffs`), the outputs in reverse
    order where `flips[n]`; `taps` covers the widest filter (`filter_taps`).

    Pillow's weight is max(0, 1 - d / support) over the distance d from the output pixel's centre,
    normalised over the pixels inside the image: nonzero only within `support` of the centre. So
    each output's band of taps is weighed (N x out x taps, in float32), and the bands are added into
    a zeroed (N, out, span) matrix, which the products need: the matrix is written once, where
    weighing every (output, pixel) pair would pass over it several times."""
    device = starts.device
    scale = (ends - starts) / out
    support = scale.clamp(min=1.0)
    steps = torch.arange(out, device=device) + 0.5
    steps = torch.where(flips[:, None], out - steps, steps)
    centres = starts[:, None] + steps * scale[:, None]
    pixels = (centres - support[:, None] + 0.5).floor()[:, :, None] + torch.arange(taps, device=device)
    weights = (1.0 - ((pixels + 0.5) - centres[:, :, None]).abs() / support[:, None, None]).clamp_(min=0.0)
    weights *= (pixels >= 0) & (pixels < sizes[:, None, None])
    weights /= weights.sum(dim=2, keepdim=True)
    matrix = torch.zeros(len(starts), out, span, dtype=dtype, device=device)
    return matrix.scatter_add_(2, pixels.long().clamp_(0, span - 1), weights.to(dtype))


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

    The images are concatenated once, and each (image, row, channel) of the result is one window
    of `width` consecutive elements of that concatenation: the gather indexes the windows (a view,
    `unfold`) by one offset per row, computed for the whole batch. The device's work for a batch is
    a few kernels however many images it has, where a copy per image would queue one kernel per
    image beside the step's (and take the allocator's and the driver's locks from the training
    thread once per image), and it reads no index per pixel."""
    device = images[0].device
    height, width = aligned(int((ys[1] - ys[0]).max())), aligned(int((xs[1] - xs[0]).max()))
    # The last row's window may reach `width` elements past the last image.
    flat = torch.cat([*(image.reshape(-1) for image in images), images[0].new_zeros(width)])
    channels, rows, columns = shapes.T
    sizes = channels * rows * columns
    starts = np.cumsum(sizes) - sizes
    # Per image: its span's first element, channel stride, row stride, span's height.
    table = np.stack(
        [starts + ys[0] * columns + xs[0], np.where(channels == 3, rows * columns, 0), columns, ys[1] - ys[0]]
    )
    first, channel, row, count = torch.from_numpy(table).to(device)[:, :, None]
    lines = torch.minimum(torch.arange(height, device=device), count - 1)
    offsets = (first + lines * row)[:, :, None] + (torch.arange(3, device=device) * channel)[:, None, :]
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
    images' sizes. The host's share (spans, offsets, boxes within the spans) is computed over the
    batch's arrays at once: it holds the interpreter's lock, which the training thread waits for.

    `dtype` is what the products run in: float16 on CUDA (tensor cores: the step the decode shares
    the GPU with loses the least), float32 elsewhere. Levels are exact in float16 and each pass
    rounds to a level, so float16's precision moves a pixel by a level only where a product lands
    within a few hundredths of a half (`CENTRE`)."""
    device = images[0].device
    dtype = dtype or (torch.float16 if device.type == "cuda" else torch.float32)
    shapes = np.array([image.shape for image in images], dtype=np.int64)
    left, top, right, bottom, flip = windows.numpy().T
    xs = source_spans(left, right, crop, shapes[:, 2])
    ys = source_spans(top, bottom, crop, shapes[:, 1])
    # Converted, centred and raised by a half in one pass (computed in float32, stored in `dtype`):
    # the weights sum to one, so the first pass's products come out raised for `rounded`.
    pixels = gathered(images, shapes, xs, ys)
    sources = torch.sub(pixels, CENTRE - 0.5, out=torch.empty(pixels.shape, dtype=dtype, device=device))
    count, height, _, width = sources.shape
    # Each box relative to its span, with the span's size and the flip: one copy to the device.
    relative = np.stack([left - xs[0], right - xs[0], xs[1] - xs[0], top - ys[0], bottom - ys[0], ys[1] - ys[0], flip])
    axes = torch.from_numpy(relative.astype(np.float32)).to(device)
    flips = axes[6] > 0.5
    x_taps, y_taps = filter_taps(right - left, crop), filter_taps(bottom - top, crop)
    x_weights = bilinear_weights(axes[0], axes[1], axes[2], crop, width, flips, x_taps, dtype)
    y_weights = bilinear_weights(axes[3], axes[4], axes[5], crop, height, torch.zeros_like(flips), y_taps, dtype)
    # Each pass one batched product per image, its channels side by side (no weights repeated
    # per channel): (rows x channels, width) @ (width, crop), then (crop, rows) @ (rows, channels x crop).
    rows = rounded(torch.bmm(sources.view(count, height * 3, width), x_weights.transpose(1, 2)))
    resized = rounded(torch.bmm(y_weights, rows.view(count, height, 3 * crop)).add_(0.5))
    return resized.add_(CENTRE).to(torch.uint8).view(count, crop, 3, crop).permute(0, 2, 1, 3)
