"""The attention kernel a Keras row names is the one its backend ran, observed on CPU in each
Keras environment: what changes the kernel (torch's SDPA restricted to math, Keras asking for
flash) changes the name."""

import json
import subprocess

import pytest
from conftest import TESTS, cli_env, framework_python

from mgbench.core.config import RunConfig
from mgbench.frameworks.registry import framework_spec

CUDNN_HLO = (
    "custom-call.7 = (bf16[4,4,1024,64]{3,1,2,0}, u8[0]{0}) custom-call(Arg_0.1, Arg_1.2, Arg_2.3), "
    'custom_call_target="__cudnn$fmhaSoftmax", api_version=API_VERSION_STATUS_RETURNING'
)
"""A line of a compiled HLO module where JAX runs cuDNN's fused attention (no GPU here to compile one)."""

JAX_PROBE = f"""
import json
from unittest import mock
import jax
from mgbench.core.models import model_spec
from mgbench.frameworks.keras_jax.attention import attention_kernel, kernel_in

vit, device = model_spec("vit_b_16"), jax.devices("cpu")[0]
found = {{
    "fp32": attention_kernel(vit, 32, 2, device, "fp32"),
    "bf16": attention_kernel(vit, 32, 2, device, "bf16"),
    "tiny": attention_kernel(model_spec("tiny"), 32, 2, device, "fp32"),
    "gpt2": attention_kernel(model_spec("gpt2-tiny"), 64, 2, device, "fp32"),
    "cudnn_hlo": kernel_in({CUDNN_HLO!r}),
}}
with mock.patch("keras.src.backend.jax.nn._can_use_flash_attention", return_value=True):
    found["flash_asked"] = attention_kernel(vit, 32, 2, device, "fp32")
print(json.dumps(found))
"""

TORCH_PROBE = """
import json
from unittest import mock
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from mgbench.core.models import model_spec
from mgbench.frameworks.keras.attention import attention_of
from mgbench.frameworks.keras_torch.attention import attention_kernel

vit, gpt2, cpu = model_spec("vit_b_16"), model_spec("gpt2-tiny"), torch.device("cpu")
found = {"fp32": attention_kernel(vit, 32, 2, cpu, "fp32"), "tiny": attention_kernel(model_spec("tiny"), 32, 2, cpu, "fp32")}
found["gpt2"] = attention_kernel(gpt2, 64, 2, cpu, "fp32")
for name, spec, size in (("gpt2", gpt2, 8), ("vit", vit, 32)):
    attention = attention_of(spec, size, 2)
    query, key, value = (torch.randn(attention.size) for _ in range(3))
    # Masked causally, the first token attends to itself alone: its output is its own value.
    own = bool(torch.allclose(attention.attend(query, key, value)[:, 0], value[:, 0], atol=1e-6))
    found[name + "_probe"] = [list(attention.size), attention.is_causal, own]
with sdpa_kernel([SDPBackend.MATH]):
    found["math"] = attention_kernel(vit, 32, 2, cpu, "fp32")
    with mock.patch("torch.backends.cuda.can_use_flash_attention", return_value=True):
        found["flash_asked_over_math"] = attention_kernel(vit, 32, 2, cpu, "fp32")
print(json.dumps(found))
"""

TF_PROBE = """
import json
import keras
import tensorflow as tf
from mgbench.core.models import model_spec
from mgbench.frameworks.keras.transformer import attend
from mgbench.frameworks.keras_tf.attention import attention_kernel

spec = tf.TensorSpec((2, 5, 12, 64), tf.float32)
graph = tf.function(attend).get_concrete_function(spec, spec, spec).graph
try:
    keras.ops.dot_product_attention(*(tf.zeros((2, 5, 12, 64)),) * 3, flash_attention=True)
    flash = "accepted"
except ValueError:
    flash = "refused"
print(json.dumps({
    "eager": attention_kernel(model_spec("vit_b_16"), compiled=False),
    "compiled": attention_kernel(model_spec("vit_b_16"), compiled=True),
    "tiny": attention_kernel(model_spec("tiny"), compiled=False),
    "gpt2": attention_kernel(model_spec("gpt2-tiny"), compiled=False),
    "ops": sorted({op.type for op in graph.get_operations()}),
    "flash": flash,
}))
"""


def probe(framework: str, code: str) -> dict:
    """Run `code` in the framework's interpreter, with the variables its runs set (Keras' backend,
    the CPU), and read the JSON it prints last."""
    spec = framework_spec(framework)
    variables = spec.variables_for(RunConfig.flat(framework, spec.defaults[0], "tiny", 1, "cpu", 1, 1))
    env = cli_env(PYTHONPATH=f"{TESTS.parent}:{TESTS}", **variables)
    done = subprocess.run(
        [framework_python(framework), "-c", code], capture_output=True, text=True, timeout=600, env=env
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_keras_jax_names_xla_on_cpu_and_cudnn_where_the_hlo_calls_it() -> None:
    found = probe("keras-jax", JAX_PROBE)
    assert found["fp32"] == found["bf16"] == "XLA's own (dot, softmax, dot fusions); Keras left flash off"
    assert found["tiny"] is None
    assert found["gpt2"] == "XLA's own (dot, softmax, dot fusions); Keras left flash off"
    assert found["cudnn_hlo"] == "cuDNN flash attention (__cudnn$fmhaSoftmax)"
    # Keras asks for cuDNN, which the CPU refuses: XLA's kernel runs, and the row says Keras asked.
    assert found["flash_asked"] == "XLA's own (dot, softmax, dot fusions); Keras asked for flash"


@pytest.mark.slow
def test_keras_torch_names_the_sdpa_backend_it_reaches() -> None:
    found = probe("keras-torch", TORCH_PROBE)
    assert found["fp32"] == "torch SDPA: flash (CPU); Keras left flash off"
    assert found["math"] == "torch SDPA: math (matmul, softmax, matmul); Keras left flash off"
    # Keras restricting SDPA to flash overrides the caller's math-only restriction.
    assert found["flash_asked_over_math"] == "torch SDPA: flash (CPU); Keras asked for flash"
    assert found["tiny"] is None
    # GPT-2's causal attention, probed as the model calls it: (batch, tokens, heads, head width).
    assert found["gpt2"] == "torch SDPA: flash (CPU); Keras left flash off"
    assert found["gpt2_probe"] == [[2, 8, 2, 32], True, True]
    assert found["vit_probe"] == [[2, 5, 12, 64], False, False]


@pytest.mark.slow
def test_keras_tf_names_the_unfused_ops_its_backend_writes() -> None:
    """The name is read from Keras' TF code; this holds the installed Keras to it: einsums and a
    softmax in the traced attention, no flash to ask for."""
    found = probe("keras-tf", TF_PROBE)
    assert {"Einsum", "Softmax"} <= set(found["ops"])
    assert found["flash"] == "refused"
    assert (
        found["eager"] == "Keras' TF ops (einsum, softmax in float32, einsum), TensorFlow kernels; Keras left flash off"
    )
    assert found["compiled"] == "Keras' TF ops (einsum, softmax in float32, einsum), XLA-compiled; Keras left flash off"
    assert found["tiny"] is None
    assert found["gpt2"] == found["eager"]
