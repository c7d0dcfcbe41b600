"""How a gradient is handed to Horovod's collectives, which take contiguous tensors only.

A channels_last weight's gradient is dense but not contiguous in PyTorch's sense. Handing
Horovod `grad.contiguous()` costs a copy per gradient, and worse: Horovod then sets that
contiguous copy as the parameter's gradient, so gradient and weight no longer share strides and
torch's multi-tensor (foreach) optimizer step leaves its fast path for a kernel per tensor and
operation. Instead the gradient's own memory is handed over as a contiguous view (its dimensions
permuted into memory order), reduced in place, and permuted back: the gradient keeps the
weight's layout and nothing is copied. An all-reduce is elementwise, so the order in which the
elements lie does not change its result.

Kept apart from Horovod's import so that the layout arithmetic is testable without Horovod.
"""

from __future__ import annotations

import torch

Order = tuple[int, ...]


def memory_order(tensor: torch.Tensor) -> Order:
    """The dimensions from the outermost in memory to the innermost (largest stride first;
    size-1 dimensions, whose stride is arbitrary, keep their place among equals)."""
    return tuple(sorted(range(tensor.dim()), key=lambda dim: (-tensor.stride(dim), dim)))


def inverse(order: Order) -> Order:
    return tuple(sorted(range(len(order)), key=order.__getitem__))


class InPlaceLayout:
    """Horovod's compression hook, used to hand over each gradient without a copy: `compress`
    gives a contiguous tensor over the gradient's memory (a copy only where its memory is not
    dense), `decompress` gives the result back in the gradient's own layout."""

    @staticmethod
    def compress(tensor: torch.Tensor) -> tuple[torch.Tensor, Order | None]:
        if tensor.is_contiguous():
            return tensor, None
        order = memory_order(tensor)
        permuted = tensor.permute(order)
        if permuted.is_contiguous():
            return permuted, order
        return tensor.contiguous(), None

    @staticmethod
    def decompress(tensor: torch.Tensor, order: Order | None) -> torch.Tensor:
        return tensor if order is None else tensor.permute(inverse(order))
