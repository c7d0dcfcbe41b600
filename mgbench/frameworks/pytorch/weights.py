"""Where a PyTorch model starts: the shared initial weights (`--init`), and the job's batch-norm
settings. torchvision's names and layouts are the shared weights' own, so the map is the state
dict itself; Horovod and the FLOP count build the same modules."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import torch
from torch import nn

from mgbench.common.errors import UsageError
from mgbench.common.initial_weights import InitialWeights
from mgbench.common.models import Hyperparameters

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
    """A saved torch state dict (a checkpoint holding one under `state_dict` too) as numpy arrays,
    loaded without running pickled code (`weights_only`)."""
    try:
        saved = torch.load(path, map_location="cpu", weights_only=True)
    except (OSError, RuntimeError, pickle.UnpicklingError) as error:
        raise UsageError(f"{path}: not a torch state dict ({str(error).splitlines()[0]})") from None
    state = saved.get("state_dict", saved) if isinstance(saved, dict) else None
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise UsageError(f"{path}: not a torch state dict (no named tensors in it)")
    return {name: tensor.float().numpy() for name, tensor in state.items()}
