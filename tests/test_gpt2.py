"""GPT-2 as data (`core.gpt2`), its PyTorch and Keras builds, and their one start
(`core.initial_weights.gpt2_reference_weights`): counts, FLOPs, causality, and the same first loss in every framework."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from conftest import framework_python, run_in

from mgbench.core.errors import UsageError
from mgbench.core.gpt2 import GPT2_SHAPES, INIT_STD
from mgbench.core.initial_weights import gpt2_reference_weights
from mgbench.datasets.synthetic import Shard
from mgbench.datasets.tokens import synthetic_tokens
from mgbench.frameworks.pytorch.gpt2 import GPT2LM, build_gpt2, language_model_loss
from mgbench.frameworks.pytorch.weights import load_initial

TINY = GPT2_SHAPES["gpt2-tiny"]
PADDING_ROWS = 50_304 - 50_257
PUBLISHED_PARAMETERS = {
    "gpt2": 124_439_808 + PADDING_ROWS * 768,
    "gpt2-medium": 354_823_168 + PADDING_ROWS * 1024,
    "gpt2-xl": 1_557_611_200 + PADDING_ROWS * 1600,
    "gpt2-tiny": 512 * 64 + 64 * 64 + 2 * (12 * 64 * 64 + 13 * 64) + 2 * 64,
}
"""The published models' parameters (Hugging Face's GPT2Model, vocabulary 50,257, position
embeddings included) plus the padding rows of the embedding; the tiny one by hand: embeddings,
two blocks of 12 d^2 + 13 d (four linear layers with biases, two layer norms), the final norm."""
SEQ_LEN = 16
LOGITS_TOLERANCE = 2e-6
"""float32 rounding between frameworks (JAX's logits differ from torch's by about 2e-7 in
logits of about 0.2): at GPT-2's start the MLP adds little to the logits, so exact GELU in place
of its tanh approximation moves them by only 1e-5, which a looser bound would let through."""
BATCH = 2


def tokens(seq_len: int = SEQ_LEN) -> tuple[np.ndarray, np.ndarray]:
    return synthetic_tokens(TINY.vocabulary, seq_len, 0, Shard(0, BATCH), seed=0)


@pytest.mark.parametrize("name", sorted(PUBLISHED_PARAMETERS))
def test_each_shape_counts_the_published_parameters_as_the_torch_model_holds_them(name: str) -> None:
    shape = GPT2_SHAPES[name]
    assert shape.parameters() == PUBLISHED_PARAMETERS[name]
    with torch.device("meta"):
        model = GPT2LM(shape)
    assert sum(parameter.numel() for parameter in model.parameters()) == PUBLISHED_PARAMETERS[name]
    assert [(key, tuple(value.shape)) for key, value in model.state_dict().items()] == [
        (array.name, array.shape) for array in shape.arrays()
    ]


def test_gpt2s_flops_per_token_are_6n_and_its_attention() -> None:
    """By hand: N leaves out the 1024 x 768 position embedding; attention adds 12 L d T."""
    gpt2 = GPT2_SHAPES["gpt2"]
    n = 124_475_904 - 1024 * 768
    assert gpt2.parameters(positions=False) == n == 123_689_472
    assert gpt2.flops_per_token(1024) == 6 * n + 12 * 12 * 768 * 1024 == 855_383_040
    assert round(gpt2.flops_per_token() / 1e6) == 855
    assert gpt2.flops_per_token(1024) - gpt2.flops_per_token(512) == 12 * 12 * 768 * 512


def test_the_torch_forward_is_causal() -> None:
    """Changing a token changes the logits from its position on, never before it."""
    model = build_gpt2(TINY, seed=0)
    inputs = torch.from_numpy(tokens()[0]).long()
    changed = inputs.clone()
    changed[:, 10] = (changed[:, 10] + 1) % TINY.vocabulary
    with torch.no_grad():
        before, after = model(inputs), model(changed)
    assert before.shape == (BATCH, SEQ_LEN, TINY.padded_vocabulary)
    torch.testing.assert_close(after[:, :10], before[:, :10], rtol=0, atol=1e-6)
    assert (after[:, 10:] - before[:, 10:]).abs().amax(dim=-1).min() > 1e-4


def test_the_torch_model_refuses_more_tokens_than_its_context() -> None:
    model = GPT2LM(TINY)
    model(torch.zeros(1, TINY.context, dtype=torch.long))
    with pytest.raises(UsageError, match=f"1 to {TINY.context} tokens .*not {TINY.context + 1}"):
        model(torch.zeros(1, TINY.context + 1, dtype=torch.long))


def _spread(arrays: dict[str, np.ndarray], part: str) -> float:
    """The standard deviation of every array whose name ends with `part`, taken together."""
    return float(np.concatenate([value.ravel() for name, value in arrays.items() if name.endswith(part)]).std())


@pytest.mark.parametrize("source", ["numpy draw", "torch's own"])
def test_the_initialisation_is_gpt2s_with_scaled_residual_projections(source: str) -> None:
    if source == "numpy draw":
        arrays = gpt2_reference_weights(TINY, seed=0).arrays
    else:
        arrays = {name: value.numpy() for name, value in build_gpt2(TINY, seed=0).state_dict().items()}
    residual = INIT_STD / math.sqrt(2 * TINY.layers)
    for part, std in (("wte.weight", INIT_STD), ("c_fc.weight", INIT_STD), ("c_proj.weight", residual)):
        assert _spread(arrays, part) == pytest.approx(std, rel=0.05), part
    assert all(not value.any() for name, value in arrays.items() if name.endswith("bias"))
    assert all((arrays[f"h.{index}.ln_1.weight"] == 1).all() for index in range(TINY.layers))


def test_each_start_is_the_same_for_one_seed_and_another_for_another() -> None:
    first, again, other = (gpt2_reference_weights(TINY, seed).digest for seed in (0, 0, 1))
    assert first == again != other
    own = [build_gpt2(TINY, seed).state_dict()["h.0.attn.c_attn.weight"] for seed in (0, 0, 1)]
    assert torch.equal(own[0], own[1]) and not torch.equal(own[0], own[2])


KERAS_FORWARD = """
import json, os, sys
os.environ["KERAS_BACKEND"] = sys.argv[1]
import keras
import numpy as np
from mgbench.core.errors import UsageError
from mgbench.core.gpt2 import GPT2_SHAPES
from mgbench.core.initial_weights import gpt2_reference_weights
from mgbench.datasets.synthetic import Shard
from mgbench.datasets.tokens import synthetic_tokens
from mgbench.frameworks.keras.gpt2 import build_gpt2, language_model_loss
from mgbench.frameworks.keras.weights import load_initial

shape = GPT2_SHAPES["gpt2-tiny"]
inputs, targets = synthetic_tokens(shape.vocabulary, int(sys.argv[2]), 0, Shard(0, int(sys.argv[3])), seed=0)
model = build_gpt2(shape, seed=0, seq_len=inputs.shape[1])
weights = gpt2_reference_weights(shape, seed=0)
load_initial(model, weights)
logits = model(inputs)
np.save(sys.argv[4], keras.ops.convert_to_numpy(logits))
loss = float(keras.ops.convert_to_numpy(language_model_loss()(targets, logits)))
try:
    build_gpt2(shape, seed=0, seq_len=shape.context + 1)
    refusal = None
except UsageError as error:
    refusal = str(error)
print(json.dumps({"loss": loss, "digest": weights.digest, "refusal": refusal}))
"""


@pytest.mark.parametrize("framework, backend", [("keras-jax", "jax"), ("keras-torch", "torch")])
def test_keras_from_the_shared_start_computes_pytorchs_first_loss(framework: str, backend: str, tmp_path) -> None:
    """Both load `gpt2_reference_weights` (drawn in each interpreter: the digests agree) and run
    the same tokens: Keras' logits at every position are torch's, so its loss is too. A build
    for more tokens than the context is refused, as torch's forward refuses them."""
    python = framework_python(framework)
    weights = gpt2_reference_weights(TINY, seed=0)
    model = GPT2LM(TINY)
    load_initial(model, weights)
    inputs, targets = tokens()
    with torch.no_grad():
        logits = model(torch.from_numpy(inputs).long())
    loss = float(language_model_loss(logits, torch.from_numpy(targets)))
    out = tmp_path / "logits.npy"
    keras = json.loads(run_in(python, KERAS_FORWARD, backend, str(SEQ_LEN), str(BATCH), str(out)))
    assert keras["digest"] == weights.digest
    np.testing.assert_allclose(np.load(out), logits.numpy(), rtol=0, atol=LOGITS_TOLERANCE)
    assert abs(keras["loss"] - loss) < 1e-3
    assert keras["refusal"] == TINY.length_refusal(TINY.context + 1) is not None
