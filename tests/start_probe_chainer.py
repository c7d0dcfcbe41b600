"""The same-start probe in Chainer: `python start_probe_chainer.py MODEL SIZE OUT.npz` writes the
logits of the fixed NCHW batch (`same_start_batch`) in inference (`eval`) and training (`train`,
batch statistics) mode, from the `--init same` weights."""

import sys

import numpy as np
from same_start import same_start_batch, start_weights

from mgbench.core.kinds import DataFormat
from mgbench.core.models import model_spec
from mgbench.frameworks.chainer import models, weights
from mgbench.frameworks.chainer.imports import chainer


def main(model: str, size: int, out: str) -> None:
    spec = model_spec(model)
    net = models.build_model(spec, size, DataFormat.CHANNELS_FIRST)
    weights.set_batch_norm(net, spec.hyperparameters)
    weights.load_initial(net, start_weights(spec, size))
    images = same_start_batch(spec, size)
    logits = {}
    with chainer.no_backprop_mode():
        for mode, training in (("eval", False), ("train", True)):
            with chainer.using_config("train", training):
                logits[mode] = net(images).array
    np.savez(out, **logits)


if __name__ == "__main__":
    for model, size, out in zip(*[iter(sys.argv[1:])] * 3, strict=True):
        main(model, int(size), out)
