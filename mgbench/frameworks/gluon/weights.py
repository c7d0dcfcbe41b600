"""Where a Gluon net starts: the shared initial weights (`--init`), and the job's batch-norm
settings. The nets' children carry torchvision's module names (`architectures.py`,
`transformer.py`), so a layer's path in the net is its name in the shared weights; Gluon lays
convolutions out OIHW and dense layers (out, in) as torch does, so the arrays are copied as they are."""

from __future__ import annotations

from collections.abc import Iterator

import mxnet as mx
from mxnet import gluon
from mxnet.gluon import nn

from mgbench.core.initial_weights import InitialWeights
from mgbench.core.models import Hyperparameters
from mgbench.frameworks.gluon import transformer

LAYER_NAMES = {"weight": "weight", "bias": "bias"}
TORCH_NAMES = {
    nn.Conv2D: LAYER_NAMES,
    nn.Dense: LAYER_NAMES,
    nn.BatchNorm: {"gamma": "weight", "beta": "bias", "running_mean": "running_mean", "running_var": "running_var"},
    nn.LayerNorm: {"gamma": "weight", "beta": "bias"},
    transformer.VisionTransformer: {"class_token": "class_token"},
    transformer.Encoder: {"pos_embedding": "pos_embedding"},
    transformer.SelfAttention: {"in_proj_weight": "in_proj_weight", "in_proj_bias": "in_proj_bias"},
}
"""Each block holding weights of its own, its Gluon parameters and torchvision's names for them."""


def weighted_layers(block: gluon.Block, path: str = "") -> Iterator[tuple[str, gluon.Block, dict[str, str]]]:
    """Every block holding weights of its own (`block` included), with its path (children's names
    joined by dots, as torch joins them; the net's own is "") and its parameters' torchvision
    names, in the net's order. A block's children are searched too: a transformer's attention
    holds its input projection and has its output projection as a child."""
    names = TORCH_NAMES.get(type(block))
    if names is not None:
        yield path, block, names
    for name, child in block._children.items():
        yield from weighted_layers(child, f"{path}.{name}" if path else name)


def load_initial(net: gluon.Block, weights: InitialWeights) -> None:
    """Set every parameter of the initialised `net` (on all its contexts) to the shared array of
    its torchvision name, each checked by shape; an array left over or missing is one UsageError."""
    for path, layer, names in weighted_layers(net):
        for attribute, torch_name in names.items():
            parameter = getattr(layer, attribute)
            if parameter is not None:
                name = f"{path}.{torch_name}" if path else torch_name
                parameter.set_data(mx.nd.array(weights.take(name, parameter.shape)))
    weights.check_all_taken()


def set_batch_norm(net: gluon.Block, hyperparameters: Hyperparameters) -> None:
    """The job's batch-norm momentum (Gluon keeps `momentum` of the old average: 1 minus torch's)
    and epsilon on every batch-norm layer, before the net is hybridized. Gluon takes them only at
    construction (into `_kwargs`, what its forward passes to the operator), and the model zoo's
    Inception-v3 builds its own. One difference stays: Gluon's moving variance averages the
    batch's biased variance, torch's the unbiased one (n / (n - 1) larger over n values)."""

    def configure(block: gluon.Block) -> None:
        if isinstance(block, nn.BatchNorm):
            block._kwargs["momentum"] = 1.0 - hyperparameters.batch_norm_momentum
            block._kwargs["eps"] = hyperparameters.batch_norm_epsilon

    net.apply(configure)
