"""Gluon's ViT-B/16: torchvision's parameters at any image size, the shared start loaded array by
array under torchvision's names, and the attention kernel a row names being the operators the
model's graph runs. One process of Gluon's interpreter sets the model up at 32 px through the
adapter, builds it at 64 px (shapes only: every layer is given its input width), and reports."""

import json

import pytest
from conftest import framework_python, run_in

from mgbench.core.models import model_spec

VIT = model_spec("vit_b_16")

PROBE = """
import json
import mxnet as mx
import numpy as np
from mgbench.core.config import RunConfig
from mgbench.core.errors import UsageError
from mgbench.core.initial_weights import InitialWeights, reference_weights
from mgbench.core.kinds import DataFormat
from mgbench.core.models import model_spec
from mgbench.frameworks.gluon import models, transformer, weights
from mgbench.frameworks.gluon.adapter import create_adapter

spec = model_spec("vit_b_16")

def counts(net):
    trainable = models.trainable(net)
    return [sum(int(np.prod(p.shape)) for p in trainable.values()), len(trainable)]

adapter = create_adapter("device")
info = adapter.setup(RunConfig.flat(framework="gluon", strategy="device", model="vit_b_16", devices=1, device_kind="cpu",
                               batch_per_device=2, steps=1, image_size=32, init="framework"))
net = adapter.net
wide = models.build_model(spec, 64, DataFormat.CHANNELS_FIRST)

start = reference_weights(spec, 0, 32)
rng = np.random.default_rng(3)  # every array distinct (the draw has equal layer norms, zero biases)
start.arrays = {name: rng.random(a.shape, np.float32) for name, a in start.arrays.items()}
weights.load_initial(net, start)
block = net.encoder.layers._children["encoder_layer_11"]
arrays = {
    "class_token": net.class_token,
    "encoder.pos_embedding": net.encoder.pos_embedding,
    "conv_proj.weight": net.conv_proj.weight,
    "encoder.layers.encoder_layer_11.self_attention.in_proj_weight": block.self_attention.in_proj_weight,
    "encoder.layers.encoder_layer_11.self_attention.out_proj.bias": block.self_attention.out_proj.bias,
    "encoder.layers.encoder_layer_11.ln_2.weight": block.ln_2.gamma,
    "encoder.layers.encoder_layer_11.mlp.3.weight": block.mlp._children["3"].weight,
    "encoder.ln.bias": net.encoder.ln.beta,
    "heads.head.weight": net.heads._children["head"].weight,
}
placed = {name: bool(np.array_equal(p.data().asnumpy(), start.arrays[name])) for name, p in arrays.items()}
loaded = sorted(p.data().asnumpy().tobytes() for p in models.trainable(net).values())
wider_position = np.zeros(wide.encoder.pos_embedding.shape, np.float32)
try:
    weights.load_initial(net, InitialWeights({**start.arrays, "encoder.pos_embedding": wider_position}, "64 px"))
    refused = ""
except UsageError as error:
    refused = str(error)

graph = json.loads(transformer.vision_transformer(spec, 32)(mx.sym.var("images")).tojson())
operators = [node["op"] for node in graph["nodes"]]
tiny = models.build_model(model_spec("tiny"), 32, DataFormat.CHANNELS_FIRST)
print(json.dumps({
    "counts": {32: counts(net), 64: counts(wide)},
    "info": [info.parameters, info.attention_kernel],
    "placed": placed,
    "every_array_once": loaded == sorted(a.tobytes() for a in start.arrays.values()),
    "refused": refused,
    "kernel": transformer.attention_kernel(net),
    "declared": [transformer.SelfAttention.KERNEL, transformer.SelfAttention.OPERATORS],
    "attention_operators": [op for op in operators if op in transformer.SelfAttention.OPERATORS],
    "fused_operators": [op for op in operators if "selfatt" in op.lower()],
    "no_attention": transformer.attention_kernel(tiny),
}))
"""


@pytest.fixture(scope="module")
def probe() -> dict:
    return json.loads(run_in(framework_python("gluon"), PROBE))


def test_the_parameters_are_torchvisions_at_two_image_sizes(probe) -> None:
    for size in (32, 64):
        assert probe["counts"][str(size)] == [VIT.parameters_at(size), VIT.reference_tensors]
    assert probe["info"][0] == VIT.parameters_at(32)


def test_every_shared_array_lands_on_its_torchvision_name_once(probe) -> None:
    assert probe["placed"] and all(probe["placed"].values()), probe["placed"]
    assert probe["every_array_once"]
    assert "'encoder.pos_embedding'" in probe["refused"] and "(1, 17, 768)" in probe["refused"]


def test_the_row_names_the_operators_the_attention_graph_runs(probe) -> None:
    kernel, operators = probe["declared"]
    assert probe["info"][1] == probe["kernel"] == kernel
    assert all(operator in kernel for operator in operators)
    assert probe["attention_operators"] == operators * VIT.transformer.layers
    assert probe["fused_operators"] == []
    assert probe["no_attention"] is None
