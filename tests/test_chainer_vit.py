"""Chainer's ViT-B/16: torchvision's parameters at any image size, the shared start loaded array by
array under torchvision's names, and the attention kernel a row names being what the model runs.
One process of Chainer's interpreter builds the model at 32 and 64 px and reports."""

import json

import pytest
from conftest import framework_python, run_in

from mgbench.core.models import model_spec

VIT = model_spec("vit_b_16")

PROBE = """
import json
import numpy as np
from mgbench.frameworks.chainer import compat
compat.apply()
import chainer
import chainer.functions as F
from mgbench.core.errors import UsageError
from mgbench.core.initial_weights import reference_weights
from mgbench.core.models import model_spec
from mgbench.frameworks.chainer import attention, models, weights

spec = model_spec("vit_b_16")
cpu = chainer.get_device("@numpy")
counts = {}
for size in (64, 32):
    net = models.build_model(spec, size, "channels_first")
    counts[size] = [models.parameter_count(net), len(list(net.params()))]

start = reference_weights(spec, 0, 32)
rng = np.random.default_rng(3)  # every array distinct (the draw has equal layer norms, zero biases)
start.arrays = {name: rng.standard_normal(a.shape).astype(np.float32) for name, a in start.arrays.items()}
weights.load_initial(net, start)
block = net.encoder.layers["encoder_layer_11"]
arrays = {
    "class_token": net.class_token.array,
    "encoder.pos_embedding": net.encoder.pos_embedding.array,
    "conv_proj.weight": net.conv_proj.W.array,
    "encoder.layers.encoder_layer_11.self_attention.in_proj_weight": block.self_attention.in_proj_weight.array,
    "encoder.layers.encoder_layer_11.self_attention.out_proj.bias": block.self_attention.out_proj.b.array,
    "encoder.layers.encoder_layer_11.ln_2.weight": block.ln_2.gamma.array,
    "encoder.layers.encoder_layer_11.mlp.3.weight": block.mlp["3"].W.array,
    "encoder.ln.bias": net.encoder.ln.beta.array,
    "heads.head.weight": net.heads["head"].W.array,
}
placed = {name: bool(np.array_equal(array, start.arrays[name])) for name, array in arrays.items()}
loaded = sorted(p.array.tobytes() for p in net.params())
try:
    weights.load_initial(net, reference_weights(spec, 0, 64))
    refused = ""
except UsageError as error:
    refused = str(error)

class Patched:
    def __init__(self, function):
        self.function = function
    def __enter__(self):
        self.kept, attention.attend = attention.attend, self.function
    def __exit__(self, *exc):
        attention.attend = self.kept

with attention.FunctionNodes() as seen, chainer.no_backprop_mode():
    net(np.zeros((2, 3, 32, 32), np.float32))
q = [chainer.Variable(np.zeros((2, 12, 5, 64), np.float32)) for _ in range(3)]
with Patched(lambda query, key, value, scale: F.matmul(query, key, transb=True)):
    scores_only = attention.kernels_run(*q)
print(json.dumps({
    "counts": counts,
    "placed": placed,
    "every_array_once": loaded == sorted(a.tobytes() for a in start.arrays.values()),
    "refused": refused,
    "kernel": attention.attention_kernel(spec, 32, 2, cpu),
    "no_attention": attention.attention_kernel(model_spec("resnet50"), 64, 2, cpu),
    "model_nodes": ",".join(seen.names),
    "scores_only": scores_only,
}))
"""


@pytest.fixture(scope="module")
def found() -> dict:
    return json.loads(run_in(framework_python("chainer"), PROBE))


def test_the_build_has_torchvisions_parameters_at_each_image_size(found):
    """The position embedding has a row per token, so the count follows the image size; the
    tensors (152) do not."""
    for size in ("32", "64"):
        assert found["counts"][size] == [VIT.parameters_at(int(size)), VIT.reference_tensors]


def test_the_shared_start_puts_each_torchvision_array_in_its_place_once(found):
    assert all(found["placed"].values()), found["placed"]
    assert found["every_array_once"]
    assert "encoder.pos_embedding" in found["refused"], "weights drawn for 64 px must not load at 32 px"


def test_the_row_names_the_function_nodes_the_models_attention_runs(found):
    """The name is the nodes `attend` ran, observed: each of the 12 blocks of a forward runs that
    sequence, and an `attend` that ran something else would be named for it."""
    kernel = found["kernel"]
    assert kernel == "Chainer, unfused: MatMul, MulConstant, Softmax, MatMul (numpy)"
    nodes = kernel.removeprefix("Chainer, unfused: ").removesuffix(" (numpy)").replace(" ", "")
    assert found["model_nodes"].count(nodes) == VIT.transformer.layers
    assert found["scores_only"] == "Chainer, unfused: MatMul (numpy)"
    assert found["no_attention"] is None
