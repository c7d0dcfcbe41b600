"""The same-start probe for every Keras backend: `python start_probe_keras.py MODEL SIZE OUT.npz`
writes the logits of the fixed batch (`same_start_batch`, in NHWC) in inference (`eval`) and
training (`train`, batch statistics) mode, from the `--init same` weights. The backend is the
one KERAS_BACKEND names (the test passes the framework's own variables)."""

import sys

import keras
import numpy as np
from same_start import same_start_batch, start_weights

from mgbench.core.kinds import DataFormat
from mgbench.core.models import model_spec
from mgbench.frameworks.keras import models, weights


def main(model: str, size: int, out: str) -> None:
    spec = model_spec(model)
    net = models.build_model(spec, size, DataFormat.CHANNELS_LAST)
    weights.set_batch_norm(net, spec.hyperparameters)
    weights.load_initial(net, start_weights(spec, size))
    images = same_start_batch(spec, size).transpose(0, 2, 3, 1)
    logits = {mode: net(images, training=mode == "train") for mode in ("eval", "train")}
    np.savez(out, **{mode: keras.ops.convert_to_numpy(value) for mode, value in logits.items()})


if __name__ == "__main__":
    for model, size, out in zip(*[iter(sys.argv[1:])] * 3, strict=True):
        main(model, int(size), out)
