"""Where a PyTorch model starts: the shared initial weights (`--init`), and the job's batch-norm
settings. torchvision's names and layouts are the shared weights' own, so the map is the state
dict itself; Horovod and the FLOP count build the same modules."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import torch
from torch import nn

from mgbench.core.errors import UsageError
from mgbench.core.initial_weights import InitialWeights
from mgbench.core.models import Hyperparameters
from mgbench.core.safe_files import open_regular

BATCH_COUNTER = "num_batches_tracked"
"""torch's own count of batches seen by a batch-norm layer: not a weight, not shared."""


def load_initial(model: nn.Module, weights: InitialWeights) -> None:
    """Copy every shared array into the state dict's tensor of the same name (each checked by
    shape; an array left over or missing is one UsageError)."""
    with torch.no_grad():
        for name, tensor in model.state_dict().items():
            if not name.endswith(BATCH_COUNTER):
                tensor.copy_(torch.from_numpy(weights.take(name, tuple(tensor.shape))))
    weights.check_all_taken()


def set_batch_norm(model: nn.Module, hyperparameters: Hyperparameters) -> None:
    """The job's batch-norm momentum and epsilon on every batch-norm layer (torch's convention)."""
    for module in model.modules():
        if isinstance(module, nn.modules.batchnorm._BatchNorm):
            module.momentum = hyperparameters.batch_norm_momentum
            module.eps = hyperparameters.batch_norm_epsilon


def read_state_dict(path: Path) -> dict[str, np.ndarray]:
    """A saved torch state dict (a checkpoint holding one under `state_dict` too, or a dict of a
    model's parameters) as numpy arrays, loaded without running pickled code (`weights_only`) from
    a regular file only (a FIFO would hold the read). Anything torch cannot load, or loads as
    other than tensors of numbers by name, is one UsageError."""
    try:
        # torch warns as it loads tensors of kinds refused below (sparse, quantized): the refusal says it.
        with open(path, "rb", opener=open_regular) as handle, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            saved = torch.load(handle, map_location="cpu", weights_only=True)
    except Exception as error:  # a damaged file fails in many ways: EOFError, pickle's, zip's, torch's own
        said = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        reason = (said.splitlines() or [type(error).__name__])[0]
        raise UsageError(f"{path}: not a torch state dict ({reason})") from None
    state = saved.get("state_dict", saved) if isinstance(saved, dict) else None
    if not isinstance(state, dict) or not state:
        raise UsageError(f"{path}: not a torch state dict (no named tensors in it)")
    for name, tensor in state.items():
        if not isinstance(name, str) or not isinstance(tensor, torch.Tensor):
            raise UsageError(f"{path}: not a torch state dict ({name!r} is no name of a tensor)")
        if refusal := _tensor_refusal(tensor):
            raise UsageError(f"{path}: {name} is {refusal}, not a plain tensor of numbers")
    return {name: tensor.detach().float().numpy() for name, tensor in state.items()}


def _tensor_refusal(tensor: torch.Tensor) -> str | None:
    """Why `tensor` holds no weights to copy as float32 (None: it does)."""
    if tensor.is_meta:
        return "a meta tensor (a shape without data)"
    if tensor.layout != torch.strided:
        return f"a {tensor.layout} tensor"
    if tensor.is_quantized:
        return "a quantized tensor"
    if tensor.is_complex():
        return "a complex tensor"
    return None
