"""Where a Chainer model starts: the shared initial weights (`--init`), and the job's batch-norm
settings. The models name every link as torchvision names the module (`named.Named`), so a
link's path, `/` read as `.`, is the shared weights' prefix; each link kind of Chainer's says
which of its arrays is which torchvision state, and the models' own chains hold their parameters
under torchvision's names (the ViT's class token, position embedding, attention's input
projection). Layouts agree: Convolution2D's W is OIHW, Linear's (out, in)."""

from __future__ import annotations

from mgbench.core.errors import UsageError
from mgbench.core.initial_weights import InitialWeights
from mgbench.core.models import Hyperparameters
from mgbench.frameworks.chainer.imports import L, chainer

TORCH_STATES: dict[type[chainer.Link], dict[str, str]] = {
    L.Convolution2D: {"W": "weight", "b": "bias"},
    L.Linear: {"W": "weight", "b": "bias"},
    L.BatchNormalization: {"gamma": "weight", "beta": "bias", "avg_mean": "running_mean", "avg_var": "running_var"},
    L.LayerNormalization: {"gamma": "weight", "beta": "bias"},
}
"""Each weighted link kind's arrays (parameters and batch-norm's moving averages) by the name of
the same state in torch. Batch-norm's count of batches seen (`N`) is not a weight, as torch's
`num_batches_tracked` is not; an absent bias (`nobias`) is None and has no shared array."""


def torch_name(path: str, state: str) -> str:
    """`/layer1/0/conv1` and `weight` -> `layer1.0.conv1.weight`; the model itself (`/`) and
    `class_token` -> `class_token`."""
    return ".".join((*filter(None, path.split("/")), state))


def states(link: chainer.Link) -> dict[str, str]:
    """The link's own arrays by their torch state's name: `TORCH_STATES` for Chainer's link kinds,
    else the parameters it holds itself (not its children's), already named as torch names them."""
    if type(link) in TORCH_STATES:
        return TORCH_STATES[type(link)]
    own = (name.lstrip("/") for name, _ in link.namedparams())
    return {name: name for name in own if "/" not in name}


def load_initial(model: chainer.Link, weights: InitialWeights) -> None:
    """Copy every shared array into the link array of the same torchvision name, in place and
    checked by shape; an array left over or missing, or a link whose parameters are not yet
    initialised (a deferred input size), is one UsageError."""
    for path, link in model.namedlinks():
        for attribute, state in states(link).items():
            value = getattr(link, attribute)
            if value is None:
                continue
            array = value.array if isinstance(value, chainer.Variable) else value
            if array is None:
                raise UsageError(f"{path}/{attribute} is not initialised: give the link its input size")
            array[...] = weights.take(torch_name(path, state), array.shape)
    weights.check_all_taken()


def set_batch_norm(model: chainer.Link, hyperparameters: Hyperparameters) -> None:
    """The job's batch-norm settings on every batch-norm link: Chainer's decay is the weight of the
    old average, 1 minus torch's momentum; its default epsilon (2e-5) is replaced too."""
    for link in model.links():
        if isinstance(link, L.BatchNormalization):
            link.decay = 1.0 - hyperparameters.batch_norm_momentum
            link.eps = hyperparameters.batch_norm_epsilon
