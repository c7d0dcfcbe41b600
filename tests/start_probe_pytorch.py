"""The same-start probe in PyTorch (the reference): `python start_probe_pytorch.py MODEL SIZE OUT.npz`
writes the logits of the fixed batch (`same_start_batch`) in inference (`eval`) and training
(`train`, batch statistics) mode, from the `--init same` weights."""

import sys

import numpy as np
import torch
from same_start import same_start_batch, start_weights

from mgbench.core.kinds import DataFormat
from mgbench.core.models import model_spec
from mgbench.frameworks.pytorch import models, weights


def main(model: str, size: int, out: str) -> None:
    spec = model_spec(model)
    net = models.build_model(spec, size, DataFormat.CHANNELS_FIRST)
    weights.set_batch_norm(net, spec.hyperparameters)
    weights.load_initial(net, start_weights(spec, size))
    images = torch.from_numpy(same_start_batch(spec, size))
    with torch.no_grad():
        logits = {"eval": net.eval()(images).numpy(), "train": net.train()(images).numpy()}
    np.savez(out, **logits)


if __name__ == "__main__":
    for model, size, out in zip(*[iter(sys.argv[1:])] * 3, strict=True):
        main(model, int(size), out)
