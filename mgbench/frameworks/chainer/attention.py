"""How a Chainer transformer computes attention, and which kernels a row names for it.

Chainer (7.8.1, its last release) has no fused attention: `attend` computes it from
F.matmul, a scaling and F.softmax, each a function node of its own whose forward runs in the
array module of the device (numpy on CPU, CuPy on GPU), F.softmax through cuDNN where Chainer
finds cuDNN and is allowed it. The name is observed, not predicted: one call of `attend` on
arrays of the run's shape and device, under a function hook that records every node it runs
and whether cuDNN serves the nodes that can take it, so a change to `attend` changes the name."""

from __future__ import annotations

from typing import Any

import numpy as np

from mgbench.core.models import ModelSpec
from mgbench.frameworks.chainer.imports import F, chainer

CUDNN_NODES = ("Softmax",)
"""The function nodes of `attend` that hand their work to cuDNN on GPU when Chainer's
`use_cudnn` allows it; the others run the array module's own kernels."""


def attend(query: chainer.Variable, key: chainer.Variable, value: chainer.Variable, scale: float) -> chainer.Variable:
    """softmax(query key^T * scale) value over (batch, heads, tokens, head width) arrays: what
    torch's SDPA computes without mask or dropout."""
    scores = F.matmul(query, key, transb=True) * scale
    return F.matmul(F.softmax(scores, axis=3), value)


class FunctionNodes(chainer.FunctionHook):
    """Records, in order, the class of every function node whose forward runs under it, and
    those among `CUDNN_NODES` that run through cuDNN (the test their own forward makes)."""

    name = "mgbench_function_nodes"

    def __init__(self) -> None:
        self.names: list[str] = []
        self.cudnn: list[str] = []

    def forward_preprocess(self, function: Any, in_data: tuple[Any, ...]) -> None:
        name = type(function).__name__
        self.names.append(name)
        on_gpu = chainer.backend.get_array_module(*in_data) is not np
        if name in CUDNN_NODES and on_gpu and chainer.should_use_cudnn(">=auto"):
            self.cudnn.append(name)


def kernels_run(query: chainer.Variable, key: chainer.Variable, value: chainer.Variable) -> str:
    """The function nodes `attend` runs on these arrays, with the array module that runs them, as
    `Chainer, unfused: MatMul, MulConstant, Softmax, MatMul (numpy)`."""
    with FunctionNodes() as seen:
        attend(query, key, value, 1.0)
    module = chainer.backend.get_array_module(query).__name__
    cudnn = f"; {', '.join(seen.cudnn)} by cuDNN" if seen.cudnn else ""
    return f"Chainer, unfused: {', '.join(seen.names)} ({module}{cudnn})"


def attention_kernel(spec: ModelSpec, image_size: int, batch: int, device: chainer.backend.Device) -> str | None:
    """The kernels a step of `spec` at `image_size` px runs its attention in, on `batch` images
    on `device` (float32, Chainer's only precision here); None for a model without attention."""
    shape = spec.transformer
    if shape is None:
        return None
    size = (batch, shape.heads, shape.tokens(image_size), shape.head_width)
    query, key, value = (chainer.Variable(device.send(np.zeros(size, np.float32))) for _ in range(3))
    return kernels_run(query, key, value)
