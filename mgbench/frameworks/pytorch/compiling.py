"""`--compile` for the adapters that train torch modules: torch.compile (TorchInductor) in a mode.

The module handed in is the one the step calls, after the strategy wrapped it: for `ddp` the
DistributedDataParallel module itself, as PyTorch documents for DDP with torch.compile. Dynamo
then splits the graph at DDP's gradient buckets (its DDPOptimizer), so each bucket's all-reduce
still starts while the backward of earlier layers runs, as it does uncompiled; compiling the
inner module before wrapping would hand DDP one fused backward whose gradients all arrive at
its end. That is what Horovod gets: its optimizer hooks each parameter's gradient accumulation,
which the compiled backward (one graph: dynamo splits only DDP modules) feeds all at once, so
Horovod's all-reduces start after the whole backward instead of during it.

Compilation is lazy: the first call compiles, which is the driver's compile step.
"""

from __future__ import annotations

import torch
from torch import nn


def compiled(module: nn.Module, mode: str | None) -> nn.Module:
    """`module` compiled by torch.compile in `mode` (`default`, `reduce-overhead`, ...), or
    `module` itself where `mode` is None (the eager step)."""
    return module if mode is None else torch.compile(module, mode=mode)


def begin_step(mode: str | None) -> None:
    """Mark the start of a training step for CUDA graphs (`reduce-overhead`, `max-autotune`):
    their trees reuse a step's output memory in the next one and need to know where steps begin."""
    if mode is not None:
        torch.compiler.cudagraph_mark_step_begin()
