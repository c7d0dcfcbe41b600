"""Where a PyTorch model starts: the shared initial weights (`--init`), and the job's batch-norm
settings. torchvision's names and layouts are the shared weights' own, so the map is the state
dict itself; Horovod and the FLOP count build the same modules."""

from __future__ import annotations

import torch
from torch import nn

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
