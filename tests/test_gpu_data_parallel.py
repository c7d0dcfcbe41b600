"""Data parallelism on every GPU of the machine, in every framework that trains on GPUs.

Two steps on N GPUs with a global batch of 4 images per GPU must leave the weights that two
steps on 1 GPU leave on that whole batch, far closer than the steps moved them: each
framework's gradient exchange (NCCL all-reduce, DataParallel's reduce to GPU 0, XLA's
collectives) averages exactly what one device would have computed. Two steps, because the
synthetic pool cycles two batches: a rank training the wrong shard, or batches out of order,
fails. The tiny model has no batch-norm, so the split of the batch changes nothing else. Each
framework trains in its own data format (channels_first in Chainer).

Skipped where fewer than 2 CUDA devices are visible; `benchmarks/gpu_scaling.sh` runs it on
all the GPU machine's GPUs (N = 2, 4, 8). On CPU devices each framework's own test module
proves the same on 2 devices.
"""

import subprocess

import pytest
from conftest import assert_devices_equal_one, cli_env, framework_python

from mgbench.machine.devices import visible_gpus

GPUS = len(visible_gpus())
TOLERANCE = 1e-4
"""GPU kernels sum in another order on a batch split N ways (cuDNN, cuBLAS, XLA's fusions)."""

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(GPUS < 2, reason="data parallelism across GPUs needs 2 CUDA devices"),
]

CASES = [
    ("pytorch", "ddp"),
    ("pytorch", "fsdp"),
    ("pytorch", "fsdp-grad-op"),
    ("pytorch", "zero1"),
    ("pytorch", "dp"),
    ("pytorch", "dp-loss"),
    ("horovod", "hvd"),
    ("chainer", "chainermn"),
    ("keras-jax", "jax-dp"),
    ("keras-jax", "jax-dp-on-batch"),
    ("keras-jax", "jax-shard-map"),
    ("keras-torch", "ddp"),
]
PROBES = {
    "horovod": ("import horovod.torch as hvd; print(bool(hvd.nccl_built()))", "Horovod built with NCCL"),
    "chainer": ("import importlib.util; print(importlib.util.find_spec('cupy') is not None)", "CuPy"),
}
"""What a framework's interpreter must have to train on GPUs, beyond the framework itself."""
FULL_FP32 = {"NVIDIA_TF32_OVERRIDE": "0"}
"""cuBLAS and cuDNN run fp32 products and convolutions in TF32 where a framework lets them
(PyTorch does for cuDNN's convolutions by default), and TF32's rounding moves a batch split N
ways further than the tolerance; NVIDIA's libraries read this variable in every framework."""
FULL_FP32_BY_FRAMEWORK = {"keras-jax": {"JAX_DEFAULT_MATMUL_PRECISION": "highest"}}
"""XLA picks TF32 itself for fp32 convolutions and matrix products on GPUs unless told otherwise
(benchmarks/RUNS.md: 2026-11-28, 2x H200, run b failed by 1.2e-3 without it; 4x H200, run f
passed with it)."""


def require_gpu_build(framework: str) -> None:
    python = framework_python(framework)
    if framework in PROBES:
        code, what = PROBES[framework]
        found = subprocess.run([python, "-c", code], capture_output=True, text=True, env=cli_env())
        if found.stdout.strip() != "True":
            pytest.skip(f"{python} has no {what}")


@pytest.mark.parametrize("framework, strategy", CASES)
def test_all_gpus_equal_one_gpu_on_the_same_global_batch(tmp_path, monkeypatch, framework, strategy):
    require_gpu_build(framework)
    for name, value in {**FULL_FP32, **FULL_FP32_BY_FRAMEWORK.get(framework, {})}.items():
        monkeypatch.setenv(name, value)
    assert_devices_equal_one(tmp_path, framework, strategy, TOLERANCE, GPUS, steps="2", device="cuda")
