"""The Keras family trains GPT-2: Keras' AdamW steps as torch.optim.AdamW does, every Keras
framework trains `gpt2-tiny` from the shared start through PyTorch's losses and validation,
keras-jax's data-parallel step on 2 devices leaves the weights of 1 on the same global batch, and
a token stream trains in epochs and validates to PyTorch's perplexity.

keras-jax compiles its first step (`Compiler.always`), a training step whose loss its row does
not list: its losses are PyTorch's from the second step on, and a keras-jax run of N steps trains
as many as a PyTorch run of N + 1.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import framework_python, max_difference, mgbench, run_in, saved_state
from test_pytorch_lm import write_stream

from mgbench.core.gpt2 import GPT2_SHAPES
from mgbench.core.initial_weights import gpt2_reference_weights
from mgbench.core.models import model_spec
from mgbench.frameworks.registry import framework_spec

TINY = GPT2_SHAPES["gpt2-tiny"]
LM = ("--model", "gpt2-tiny", "--device", "cpu")
TRAINED_STEPS = 4
LOSS_TOLERANCE = 1e-4
"""float32 rounding between frameworks over a few AdamW steps, well below what a step at another
rate of the warm-up moves the next loss."""
KERAS_FRAMEWORKS = ("keras-jax", "keras-torch", "keras-tf", "tensorflow")

ADAMW_PROBE = """
import json, os, sys
os.environ["KERAS_BACKEND"] = sys.argv[1]
import numpy as np
import keras
from mgbench.core.models import model_spec
from mgbench.frameworks.keras.models import OPTIMIZERS

rates, gradients = json.loads(sys.argv[2]), np.array(json.loads(sys.argv[3]), dtype="float32")
declared = model_spec("gpt2-tiny").optimization.optimizer
own = keras.optimizers.AdamW(
    learning_rate=rates[0], weight_decay=declared.weight_decay, beta_1=declared.betas[0],
    beta_2=declared.betas[1], epsilon=declared.eps,
)
found = {}
for name, optimizer in (("torch_form", OPTIMIZERS["adamw"](rates[0], declared)), ("keras", own)):
    weights = keras.Variable(np.linspace(-1, 1, gradients.shape[1], dtype="float32"))
    steps = []
    for rate, gradient in zip(rates, gradients):
        optimizer.learning_rate = rate
        optimizer.apply([keras.ops.convert_to_tensor(gradient)], [weights])
        steps.append(np.asarray(keras.ops.convert_to_numpy(weights.value)).tolist())
    found[name] = steps
print(json.dumps(found))
"""


@pytest.mark.parametrize(("framework", "backend"), [("keras-jax", "jax"), ("keras-tf", "tensorflow")])
def test_keras_adamw_steps_as_torchs_on_the_same_gradients(framework, backend):
    """GPT-2's declared AdamW (decay 0.1, betas 0.9 and 0.95, eps 1e-8) at a rate that changes every
    step, on gradients of which some are as small as epsilon: Keras' AdamW in torch's form
    (`TorchFormAdamW`) leaves torch.optim.AdamW's weights to 1e-6, where Keras' own, epsilon added
    before the bias correction, steps the small ones elsewhere. (keras-torch steps torch's own.)"""
    declared = model_spec("gpt2-tiny").optimization.optimizer
    rates = [0.1, 0.05, 0.02, 0.01]
    gradients = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
    gradients[:, :2] *= 1e-8
    weights = torch.nn.Parameter(torch.linspace(-1, 1, 6))
    optimizer = torch.optim.AdamW(
        [weights], lr=rates[0], betas=declared.betas, eps=declared.eps, weight_decay=declared.weight_decay
    )
    expected = []
    for rate, gradient in zip(rates, gradients):
        optimizer.param_groups[0]["lr"] = rate
        weights.grad = torch.from_numpy(gradient.copy())
        optimizer.step()
        expected.append(weights.detach().numpy().copy())
    arguments = (backend, json.dumps(rates), json.dumps(gradients.tolist()))
    found = json.loads(run_in(framework_python(framework), ADAMW_PROBE, *arguments).strip().splitlines()[-1])
    np.testing.assert_allclose(found["torch_form"], expected, rtol=0, atol=1e-6)
    assert np.abs(np.array(found["keras"]) - np.array(expected)).max() > 1e-2


def run_row(framework: str, out: Path, *options: str) -> dict:
    """The one row, ok, of `mgbench run --framework FRAMEWORK` with `options`, into `out`."""
    done = mgbench("run", "--framework", framework, *options, "--out", str(out), timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    (row,) = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert row["status"] == "ok", row.get("error")
    return row


def hidden_steps(framework: str) -> int:
    """The training steps a row lists no loss of: the compile step of a framework that always compiles."""
    compiler = framework_spec(framework).capabilities.compiler
    return int(compiler is not None and compiler.always)


@pytest.fixture(scope="module")
def pytorch_steps(tmp_path_factory) -> dict:
    return run_row("pytorch", tmp_path_factory.mktemp("pytorch"), *LM, "--steps", str(TRAINED_STEPS))


@pytest.mark.slow
@pytest.mark.parametrize("framework", KERAS_FRAMEWORKS)
def test_a_keras_framework_trains_gpt2_tiny_from_the_shared_start_through_pytorchs_losses(
    framework, pytorch_steps, tmp_path
):
    """The same start (digest), parameters and AdamW steps at the same warm-up rates: every
    step's loss and the held-out loss and perplexity are PyTorch's, each run training as many steps."""
    hidden = hidden_steps(framework)
    row = run_row(framework, tmp_path, *LM, "--steps", str(TRAINED_STEPS - hidden))
    assert row["init_digest"] == gpt2_reference_weights(TINY, seed=0).digest == pytorch_steps["init_digest"]
    assert row["parameters"] == TINY.parameters()
    np.testing.assert_allclose(row["losses"], pytorch_steps["losses"][hidden:], rtol=0, atol=LOSS_TOLERANCE)
    assert row["eval_metrics"]["loss"] == pytest.approx(pytorch_steps["eval_metrics"]["loss"], abs=LOSS_TOLERANCE)
    assert row["eval_metrics"]["perplexity"] == pytest.approx(math.exp(row["eval_metrics"]["loss"]))


DATA_PARALLEL_RATE = 0.02
"""The peak rate of the data-parallel runs: their steps at the warm-up's 1/20 and 2/20 of it move
every weight by about that much (AdamW's step is near the rate), well past `DATA_PARALLEL_TOLERANCE`."""
DATA_PARALLEL_TOLERANCE = 1e-5
"""AdamW divides each gradient by its root mean square: where a gradient is zero but for rounding
(the key projection's bias, to which the softmax is blind), its step is that rounding over epsilon
times the rate, and differs as the order of the sums does, at a small share of a step."""


@pytest.mark.slow
def test_jax_dp_on_two_devices_steps_as_one_device_on_the_same_global_batch(tmp_path):
    """keras.distribution.DataParallel shards each token batch over 2 CPU devices: the weights after
    its steps (the compile step and one timed) are those of 1 device on the whole batch."""
    initial = saved_state(tmp_path, "keras-jax", "jax-dp", 1, 8, 0.0, model="gpt2-tiny")
    single = saved_state(tmp_path, "keras-jax", "jax-dp", 1, 8, DATA_PARALLEL_RATE, model="gpt2-tiny")
    spread = saved_state(tmp_path, "keras-jax", "jax-dp", 2, 4, DATA_PARALLEL_RATE, model="gpt2-tiny")
    assert max_difference(single, spread) < DATA_PARALLEL_TOLERANCE < 1e-3 < max_difference(single, initial)


def corpus_row(framework: str, stream: Path, out: Path) -> dict:
    """Two epochs of `stream` at 8 samples of 32 tokens, read by one loader worker."""
    options = ("--dataset", f"tokens:{stream}", "--epochs", "2", "--batch-per-gpu", "8", "--seq-len", "32")
    return run_row(framework, out, *LM, *options, "--workers", "1")


@pytest.fixture(scope="module")
def stream(tmp_path_factory) -> Path:
    return write_stream(tmp_path_factory.mktemp("corpus"))


@pytest.fixture(scope="module")
def pytorch_epochs(stream, tmp_path_factory) -> dict:
    return corpus_row("pytorch", stream, tmp_path_factory.mktemp("pytorch-corpus"))


@pytest.mark.slow
@pytest.mark.parametrize("framework", ["keras-jax", "keras-torch", "keras-tf"])
def test_a_token_stream_trains_in_epochs_and_validates_to_pytorchs_perplexity(
    framework, stream, pytorch_epochs, tmp_path
):
    """The framework's own loader reads every window PyTorch's reads, in its order: each epoch's
    validation (the stream's fixed `val` windows) gives PyTorch's loss and perplexity, and the
    test split, which a stream has none of, is the last validation."""
    row = corpus_row(framework, stream, tmp_path)
    assert row["loader"] == framework_spec(framework).capabilities.loader
    train_tokens = json.loads((stream / "tokens.json").read_text())["tokens"]["train"]
    assert len(row["losses"]) == 2 * (train_tokens // (8 * 32)) - hidden_steps(framework)
    for epoch, expected in zip(row["epoch_metrics"], pytorch_epochs["epoch_metrics"], strict=True):
        assert epoch["val_loss"] == pytest.approx(expected["val_loss"], abs=LOSS_TOLERANCE)
        assert epoch["val_perplexity"] == pytest.approx(math.exp(epoch["val_loss"]))
    last = row["epoch_metrics"][-1]
    assert last["val_loss"] < row["epoch_metrics"][0]["val_loss"] < math.log(TINY.vocabulary)
    assert row["test_metrics"] == {"loss": last["val_loss"], "perplexity": last["val_perplexity"]}
