"""The framework registry: names, strategies and environments, without importing any framework.

Each adapter module (`mgbench/frameworks/<name>.py`) imports its framework at its top; this
registry only names the module, so listing, validating and orchestrating runs never imports a
framework. Third-party adapters register through `MGBENCH_PLUGINS` (comma-separated module
names, each defining `FRAMEWORK: FrameworkSpec` and `create_trainer`).
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from typing import Callable, Literal

from mgbench.common.config import RunConfig
from mgbench.common.errors import UsageError
from mgbench.common.protocol import Trainer
from mgbench.frameworks.keras.environment import jax_variables, tensorflow_variables

Launcher = Literal["inprocess", "torchrun", "mpirun", "horovodrun", "tf-multiworker"]


@dataclass(frozen=True)
class StrategySpec:
    name: str
    launcher: Launcher
    description: str
    cpu_multi_device_note: str | None = None
    """Why N > 1 CPU devices cannot stand in for GPUs with this strategy (None: they can)."""


@dataclass(frozen=True)
class FrameworkSpec:
    name: str
    module: str
    strategies: tuple[StrategySpec, ...]
    import_names: tuple[str, ...]
    environment: str
    """Name of the virtual environment under `.venvs/` and of `requirements/<environment>.txt`."""
    install_hint: str
    required_commands: tuple[str, ...] = ()
    """Programs the strategies need on PATH besides the Python packages (e.g. `mpiexec`)."""
    post_install: str | None = None
    """A repo-relative script `mgbench setup` runs with the environment's interpreter after its
    requirements, for what PyPI has no wheel of (e.g. Horovod, built against the installed torch)."""
    environment_variables: Callable[[RunConfig], dict[str, str]] | None = None
    """Variables the framework reads at import (backend choice, host device count): they go into
    the run's environment, and an in-process `mgbench run` sets them before importing the adapter.
    Must not import the framework."""

    def variables_for(self, config: RunConfig) -> dict[str, str]:
        return self.environment_variables(config) if self.environment_variables else {}

    def strategy(self, name: str) -> StrategySpec:
        for strategy in self.strategies:
            if strategy.name == name:
                return strategy
        known = ", ".join(s.name for s in self.strategies)
        raise UsageError(f"framework {self.name!r} has no strategy {name!r}; its strategies: {known}")


PYTORCH = FrameworkSpec(
    name="pytorch",
    module="mgbench.frameworks.torch.adapter",
    strategies=(
        StrategySpec(
            "ddp",
            "torchrun",
            "DistributedDataParallel, one process per device (NCCL on GPU, gloo on CPU)",
        ),
        StrategySpec(
            "dp",
            "inprocess",
            "nn.DataParallel, outputs gathered on device 0 where the loss is computed",
            cpu_multi_device_note="nn.DataParallel replicates over CUDA devices only",
        ),
        StrategySpec(
            "dp-loss",
            "inprocess",
            "nn.DataParallel with the loss computed on each device; only per-device losses gathered",
            cpu_multi_device_note="nn.DataParallel replicates over CUDA devices only",
        ),
    ),
    import_names=("torch", "torchvision"),
    environment="pytorch",
    install_hint="make env-pytorch (or: pip install -r requirements/pytorch.txt)",
)

GLUON = FrameworkSpec(
    name="gluon",
    module="mgbench.frameworks.gluon.adapter",
    strategies=(
        StrategySpec(
            "device",
            "inprocess",
            "one process drives every device; gluon.Trainer sums gradients through kvstore 'device'",
        ),
        StrategySpec(
            "nccl",
            "inprocess",
            "as 'device', with gradients summed through kvstore 'nccl'",
            cpu_multi_device_note="the NCCL kvstore exchanges between CUDA devices only",
        ),
    ),
    import_names=("mxnet",),
    environment="gluon",
    install_hint="make env-gluon (Python <= 3.11; MXNet 1.9.1 is CPU-only from PyPI)",
)

CHAINER = FrameworkSpec(
    name="chainer",
    module="mgbench.frameworks.chainer.adapter",
    strategies=(
        StrategySpec(
            "chainermn",
            "mpirun",
            "ChainerMN, one MPI process per device: pure_nccl communicator on GPU, naive (MPI) on CPU",
        ),
    ),
    import_names=("chainer", "chainermn", "mpi4py"),
    environment="chainer",
    install_hint="make env-chainer (needs mpiexec: apt-get install openmpi-bin libopenmpi-dev)",
    required_commands=("mpiexec",),
)

HOROVOD = FrameworkSpec(
    name="horovod",
    module="mgbench.frameworks.torch.horovod",
    strategies=(
        StrategySpec(
            "hvd",
            "horovodrun",
            "Horovod over PyTorch: DistributedOptimizer all-reduce, one process per device (NCCL on GPU, gloo on CPU)",
        ),
    ),
    import_names=("horovod", "torch", "torchvision"),
    environment="horovod",
    install_hint="make env-horovod (builds Horovod 0.28.1 from source against torch: ~7 min on 2 cores, once)",
    post_install="scripts/build_horovod.sh",
)

KERAS = FrameworkSpec(
    name="keras",
    module="mgbench.frameworks.keras.tf_adapter",
    strategies=(
        StrategySpec("mirrored", "inprocess", "Keras 3 over TF, tf.distribute.MirroredStrategy, staged input"),
        StrategySpec("mirrored-unstaged", "inprocess", "as mirrored, input fed synchronously from host arrays"),
        StrategySpec(
            "central-storage",
            "inprocess",
            "variables on the CPU, compute mirrored on the devices (parameter server on CPU), staged input",
        ),
        StrategySpec(
            "central-storage-unstaged",
            "inprocess",
            "as central-storage, input fed synchronously from host arrays",
        ),
    ),
    import_names=("keras", "tensorflow"),
    environment="keras-tf",
    install_hint="make env-keras-tf (or: mgbench setup keras)",
    environment_variables=tensorflow_variables,
)

KERAS_JAX = FrameworkSpec(
    name="keras-jax",
    module="mgbench.frameworks.keras.jax_adapter",
    strategies=(
        StrategySpec(
            "jax-dp",
            "inprocess",
            "Keras 3 over JAX, keras.distribution.DataParallel: Keras' jitted step on a held state, "
            "batches sharded onto the devices one step ahead",
        ),
        StrategySpec(
            "jax-dp-on-batch",
            "inprocess",
            "as jax-dp, but model.train_on_batch on the pre-sharded batches (variables synced every step)",
        ),
        StrategySpec(
            "jax-shard-map",
            "inprocess",
            "Keras 3 over JAX, one device's step mapped over the devices with jax.shard_map: local "
            "batch-norm statistics as in DDP (jax-dp's DataParallel syncs them), gradients averaged by pmean",
        ),
    ),
    import_names=("keras", "jax"),
    environment="keras-jax",
    install_hint="make env-keras-jax (or: pip install -r requirements/keras-jax.txt)",
    environment_variables=jax_variables,
)

TENSORFLOW = FrameworkSpec(
    name="tensorflow",
    module="mgbench.frameworks.keras.tf_custom_loop",
    strategies=(
        StrategySpec(
            "mirrored",
            "inprocess",
            "custom loop: tf.function + strategy.run under MirroredStrategy, staged tf.data input",
        ),
    ),
    import_names=("keras", "tensorflow"),
    environment="keras-tf",
    install_hint="make env-keras-tf (or: mgbench setup tensorflow)",
    environment_variables=tensorflow_variables,
)

BUILTIN: tuple[FrameworkSpec, ...] = (PYTORCH, KERAS, KERAS_JAX, TENSORFLOW, GLUON, CHAINER, HOROVOD)


def registered() -> dict[str, FrameworkSpec]:
    """Built-in frameworks plus those named in MGBENCH_PLUGINS."""
    specs = {spec.name: spec for spec in BUILTIN}
    for module_name in filter(None, os.environ.get("MGBENCH_PLUGINS", "").split(",")):
        plugin = importlib.import_module(module_name.strip())
        specs[plugin.FRAMEWORK.name] = plugin.FRAMEWORK
    return specs


def framework_spec(name: str) -> FrameworkSpec:
    specs = registered()
    try:
        return specs[name]
    except KeyError:
        raise UsageError(f"unknown framework {name!r}; known frameworks: {', '.join(specs)}") from None


def create_trainer(framework: str, strategy: str) -> Trainer:
    """Import the adapter (and so its framework) and make a trainer for one strategy."""
    spec = framework_spec(framework)
    spec.strategy(strategy)
    adapter = importlib.import_module(spec.module)
    return adapter.create_trainer(strategy)
