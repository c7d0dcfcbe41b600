"""The work of one training image, counted on the reference architecture (`mgbench.records.peak`).

torch.utils.flop_counter counts the forward and the backward of the torchvision model the
PyTorch adapter trains, on the meta device: shapes only, no memory, no arithmetic, so counting
ResNet-50 takes about a second, most of it building the model. Its counter takes a multiply-add
as 2 FLOPs, and counts convolutions and matrix products (its registered formulas), not
normalisation or element-wise operators. The tensors the forward saves for the backward (other
than the parameters) are counted beside, for the activation-memory estimate.

The catalogue declares its networks counted here (`core.models.COUNTED_ON_TORCHVISION`): the
runner, which imports no framework, runs `python -m mgbench.frameworks.pytorch.flops MODEL
INPUT_SIZE` in the pytorch environment and reads the one JSON object it prints.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict

import torch
from torch.autograd.graph import saved_tensors_hooks
from torch.utils.flop_counter import FlopCounterMode

from mgbench.core.kinds import DataFormat
from mgbench.core.models import ModelSpec, model_spec
from mgbench.core.work import ModelWork
from mgbench.frameworks.pytorch.models import build_model

BATCH = 2
"""Images per counted step (training-mode batch-norm wants more than one); counts are per image."""


def count_work(spec: ModelSpec, image_size: int) -> ModelWork:
    """Forward + backward FLOPs and saved activation elements of one image at `image_size` px."""
    with torch.device("meta"):
        model = build_model(spec, image_size, DataFormat.CHANNELS_FIRST).train()
        images = torch.randn(BATCH, 3, image_size, image_size)
    parameters = {id(parameter) for parameter in model.parameters()}
    saved: dict[int, torch.Tensor] = {}

    def keep(tensor: torch.Tensor) -> torch.Tensor:
        base = tensor if tensor._base is None else tensor._base  # a linear layer saves its weight transposed
        if id(base) not in parameters:
            saved[id(tensor)] = tensor  # held, so an id is never reused for another tensor
        return tensor

    with FlopCounterMode(display=False) as counter:
        with saved_tensors_hooks(keep, lambda tensor: tensor):
            outputs = model(images)
        outputs.float().sum().backward()
    elements = sum(tensor.numel() for tensor in saved.values())
    return ModelWork(flops_per_sample=counter.get_total_flops() / BATCH, saved_elements_per_sample=elements / BATCH)


def main(argv: list[str]) -> None:
    """Print the work of one image of the model named at the input size given, as JSON."""
    model, input_size = argv
    print(json.dumps(asdict(count_work(model_spec(model), int(input_size)))))


if __name__ == "__main__":
    main(sys.argv[1:])
