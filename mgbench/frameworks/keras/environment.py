"""Environment variables Keras, TensorFlow, JAX and PyTorch read when they are imported.

Keras picks its backend from KERAS_BACKEND at import. Under the TF and JAX backends one process
drives every device, and JAX makes N host devices only when XLA_FLAGS says so before its
backend starts, and reserves GPU memory then unless told not to. These functions are named in
the registry's `FrameworkSpec.environment_variables`, so the orchestrator puts them in the
run's environment and an in-process worker sets them before the adapter is imported. They import nothing. (TensorFlow splits the CPU with
`tf.config` after import, so it needs no variable for that.)
"""

from __future__ import annotations

import os

from mgbench.core.config import RunConfig

XLA_HOST_DEVICES_FLAG = "--xla_force_host_platform_device_count"


def _one_process_threads() -> dict[str, str]:
    """All cores to the one process (the orchestrator's default splits them per device)."""
    return {"OMP_NUM_THREADS": str(os.cpu_count() or 1)}


def tensorflow_variables(config: RunConfig) -> dict[str, str]:
    variables = {"KERAS_BACKEND": "tensorflow", "TF_CPP_MIN_LOG_LEVEL": "2"}
    if not config.job.device_kind.on_gpu:
        variables.update(_one_process_threads())
    return variables


def torch_variables(config: RunConfig) -> dict[str, str]:
    """Keras over PyTorch runs one process per device under torchrun, like PyTorch's DDP: the
    orchestrator's per-device thread split stands. Keras' torch backend puts variables and the
    tensors it makes on "cuda" whenever torch sees a GPU, so a CPU run names the CPU."""
    variables = {"KERAS_BACKEND": "torch"}
    if not config.job.device_kind.on_gpu:
        variables["KERAS_TORCH_DEVICE"] = "cpu"
    return variables


JAX_ALLOCATES_AS_NEEDED = {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
"""With `--decode gpu` JAX shares each GPU with torch's decoder (`keras_jax/device_decode.py`).
JAX otherwise reserves a fixed share of the memory when its backend starts (75%) and torch's
caching allocator has the rest; what the decoder needs grows with the images' size and the
batch, so no fixed share fits every dataset. Allocating on demand, each framework holds what it
uses: JAX's pool grows during the warm-up steps, before any timed step."""


def jax_variables(config: RunConfig) -> dict[str, str]:
    variables = {"KERAS_BACKEND": "jax"}
    if config.job.decode.on_device:
        variables.update(JAX_ALLOCATES_AS_NEEDED)
    if not config.job.device_kind.on_gpu:
        kept = [flag for flag in os.environ.get("XLA_FLAGS", "").split() if not flag.startswith(XLA_HOST_DEVICES_FLAG)]
        variables["XLA_FLAGS"] = " ".join([*kept, f"{XLA_HOST_DEVICES_FLAG}={config.devices}"])
        variables["JAX_PLATFORMS"] = "cpu"
        variables.update(_one_process_threads())
    return variables
