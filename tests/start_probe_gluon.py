"""The same-start probe in Gluon: `python start_probe_gluon.py MODEL SIZE OUT.npz` writes the
logits of the fixed NCHW batch (`same_start_batch`) in inference (`eval`) and training (`train`,
batch statistics) mode, from the `--init same` weights, on the net the adapter builds."""

import sys

import mxnet as mx
import numpy as np
from mxnet import autograd
from same_start import same_start_batch, start_weights

from mgbench.core.kinds import DataFormat
from mgbench.core.models import model_spec
from mgbench.frameworks.gluon import models, weights


def main(model: str, size: int, out: str) -> None:
    spec = model_spec(model)
    net = models.build_model(spec, size, DataFormat.CHANNELS_FIRST)
    weights.set_batch_norm(net, spec.hyperparameters)
    net.initialize(ctx=mx.cpu())
    weights.load_initial(net, start_weights(spec, size))
    net.hybridize(static_alloc=True, static_shape=True)
    images = mx.nd.array(same_start_batch(spec, size))
    with autograd.predict_mode():
        eval_logits = net(images).asnumpy()
    with autograd.train_mode():
        train_logits = net(images).asnumpy()
    np.savez(out, eval=eval_logits, train=train_logits)


if __name__ == "__main__":
    for model, size, out in zip(*[iter(sys.argv[1:])] * 3, strict=True):
        main(model, int(size), out)
