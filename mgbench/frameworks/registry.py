"""The framework registry: names, strategies, environments and capabilities, without importing any framework.

Each family package (`mgbench/frameworks/<family>/`) holds adapters that import their framework
at their top; this registry only names the module, so listing, validating and planning runs
never imports a framework. What an adapter can train (precisions, data formats, models, a
real-data loader, a profiler, `--data-on-device`) is declared here once: `compare` turns a run
the registry knows cannot happen into an `unsupported` row before launching anything, and
adapters do not repeat it.
Third-party adapters register through `MGBENCH_PLUGINS` (comma-separated module names, each
defining `FRAMEWORK: FrameworkSpec` and `create_trainer`).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from mgbench.common.config import DEFAULT_COMPILE_MODE, PRECISIONS, RunConfig
from mgbench.common.errors import UsageError
from mgbench.common.models import MODELS
from mgbench.common.projection import (
    DDP_EXCHANGE,
    HOROVOD_EXCHANGE,
    ONE_PROCESS_PER_NODE,
    XLA_EXCHANGE,
    Dispatch,
    Exchange,
)
from mgbench.common.protocol import Adapter
from mgbench.frameworks.keras.environment import jax_variables, tensorflow_variables, torch_variables

Launcher = Literal["inprocess", "torchrun", "mpirun", "horovodrun", "tf-multiworker"]
ALL_STRATEGIES = "all"
"""`--strategies all`: every strategy of every named framework, not only its default ones."""


@dataclass(frozen=True)
class Compiler:
    """What `--compile` switches on for a framework, named without importing it."""

    name: str
    modes: tuple[str, ...] = (DEFAULT_COMPILE_MODE,)
    """The modes `--compile MODE` may name, the default first."""
    always: bool = False
    """The framework compiles every step whether or not `--compile` is given (Keras over JAX:
    its step is a jitted function), so rows of runs without `--compile` say it compiled too."""
    one_device_note: str | None = None
    """Why the compiled step cannot span several devices (None: it can)."""

    def label(self, mode: str | None) -> str | None:
        """What compiled a run's steps, as its row records it (None: nothing was compiled)."""
        if self.always:
            return f"{self.name} (always)"
        if mode is None:
            return None
        return self.name if len(self.modes) == 1 else f"{self.name} ({mode})"

    def refusal(self, config: RunConfig) -> str | None:
        if config.compile is None:
            return None
        if config.compile not in self.modes:
            return f"compiles with {self.name} in mode {', '.join(self.modes)} only, not {config.compile}"
        if config.devices > 1 and self.one_device_note:
            return f"compiles with {self.name} on one device only: {self.one_device_note}"
        return None


TORCH_COMPILE = Compiler(
    "torch.compile", (DEFAULT_COMPILE_MODE, "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
)
"""torch.compile's modes (inductor); `reduce-overhead` adds CUDA graphs."""
XLA_JIT = Compiler("xla")
"""TensorFlow's `jit_compile=True`: the step compiled by XLA instead of run as a TF graph."""
TORCH_LOADER = "torch.utils.data.DataLoader"
TORCHVISION = dict(
    models=("densenet121", "resnet50", "inception_v3", "tiny"), builders="mgbench.frameworks.pytorch.models"
)
"""torchvision's architectures, which PyTorch, Horovod over it and the FLOP count build."""
DATA_PARALLEL_NO_COMPILE = (
    "torch.compile composes with DistributedDataParallel, not with nn.DataParallel, which copies "
    "the module into new replica threads every step"
)


@dataclass(frozen=True)
class Capabilities:
    """What an adapter can train, declared without importing its framework."""

    models: tuple[str, ...]
    """The catalogue models the framework builds, declared here so that planning never imports it."""
    builders: str
    """The module whose `BUILDERS` table builds them: the framework's `models.py`, or the one of
    the framework it trains through (Horovod: PyTorch's). The contract test holds the table's
    keys to `models`."""
    precisions: tuple[str, ...] = PRECISIONS
    data_formats: tuple[str, ...] = ("channels_last", "channels_first")
    """The first is the framework's default: one it trains for every model it has (channels_last
    where the framework can: Keras' applications need it, and tensor cores prefer it)."""
    model_data_formats: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Models that accept fewer data formats than the framework (Keras' DenseNet: channels_last)."""
    loader: str | None = None
    """The framework's native loader, by its own name (e.g. `torch.utils.data.DataLoader`), that
    reads `--dataset chestxray:/labels:/imagefolder:` and trains `--epochs`; rows of real data
    record it. None: synthetic data only."""
    profiler: str | None = None
    """The profiler `--profile` runs under (None: the framework has none here)."""
    parameter_offsets: dict[str, int] = field(default_factory=dict)
    """Trainable parameters minus the model catalogue's reference count, where the framework's
    architecture differs (keras.applications' ResNet-50 gives convolutions a bias)."""
    tensor_offsets: dict[str, int] = field(default_factory=dict)
    """Trainable tensors minus the catalogue's reference count, for the same differences."""
    compiler: Compiler | None = None
    """What `--compile` does (None: the framework has no compiler here, `no_compiler` says why)."""
    no_compiler: str = "the framework has no compiler here"

    def refusal(self, config: RunConfig) -> str | None:
        """Why this adapter cannot train `config`, or None when it can."""
        if config.model not in self.models:
            return f"has no {config.model} (models: {', '.join(self.models)})"
        if config.precision not in self.precisions:
            return f"trains in {', '.join(self.precisions)} only, not {config.precision}"
        formats = self.model_data_formats.get(config.model, self.data_formats)
        if config.data_format not in formats:
            return f"trains {config.model} in {', '.join(formats)} only, not {config.data_format}"
        if config.dataset != "synthetic" and self.loader is None:
            return f"has no loader for real data (dataset {config.dataset!r}); it trains on synthetic data only"
        if config.compile is not None and self.compiler is None:
            return f"cannot compile its step (--compile): {self.no_compiler}"
        return self.compiler.refusal(config) if self.compiler else None

    def compiled_by(self, config: RunConfig) -> str | None:
        """What compiles `config`'s training step, as its row records it (None: nothing)."""
        return self.compiler.label(config.compile) if self.compiler else None

    def default_data_format(self, model: str) -> str:
        return self.model_data_formats.get(model, self.data_formats)[0]

    def expected_parameters(self, model: str) -> int:
        """The trainable parameter count this framework's build of `model` must have."""
        return MODELS[model].reference_parameters + self.parameter_offsets.get(model, 0)

    def expected_tensors(self, model: str) -> int:
        """The trainable tensors this framework's build of `model` has."""
        return MODELS[model].reference_tensors + self.tensor_offsets.get(model, 0)


@dataclass(frozen=True)
class StrategySpec:
    name: str
    launcher: Launcher
    description: str
    cpu_multi_device_note: str | None = None
    """Why N > 1 CPU devices cannot stand in for GPUs with this strategy (None: they can)."""
    no_compile_note: str | None = None
    """Why this strategy cannot run a compiled step where its framework can (None: it can)."""
    no_data_on_device_note: str | None = None
    """Why this strategy cannot keep the synthetic batches on the devices (`--data-on-device`);
    None: it does (it places the pool once and cycles it)."""
    exchange: Exchange | None = None
    """How its gradients reach the all-reduce, for `mgbench project` (None: not declared, projected
    as DDP's buckets)."""
    dispatch: Dispatch | None = None
    """Which process does each device's host work, for `mgbench project` (None: not declared,
    projected as a process per device)."""

    def refusal(self, config: RunConfig) -> str | None:
        if config.device_kind == "cpu" and config.devices > 1 and self.cpu_multi_device_note:
            return f"needs GPUs: {self.cpu_multi_device_note}"
        if config.data_on_device and self.no_data_on_device_note:
            return f"cannot keep its input on the devices (--data-on-device): {self.no_data_on_device_note}"
        if config.compile is not None and self.no_compile_note:
            return f"cannot compile {self.name}'s step (--compile): {self.no_compile_note}"
        return None


@dataclass(frozen=True)
class FrameworkSpec:
    name: str
    module: str
    strategies: tuple[StrategySpec, ...]
    import_names: tuple[str, ...]
    environment: str
    """Name of the virtual environment under `.venvs/` and of `requirements/<environment>.txt`."""
    install_hint: str
    capabilities: Capabilities
    default_strategies: tuple[str, ...] = ()
    """What `compare` runs without `--strategies`: the strategy that answers "how fast is this
    framework" (empty: the first strategy)."""
    required_commands: tuple[str, ...] = ()
    """Programs the strategies need on PATH besides the Python packages (e.g. `mpiexec`)."""
    packages_from: str | None = None
    """A framework whose environment's packages this one sees beneath its own (a `.pth` line), so
    the pins both hold are installed once: torch with its CUDA libraries is about 6 GB per copy.
    Pins the lower environment does not satisfy are installed in this one and shadow it."""
    post_install: str | None = None
    """A repo-relative script `mgbench setup` runs with the environment's interpreter after its
    requirements, for what PyPI has no wheel of (e.g. Horovod, built against the installed torch)."""
    environment_variables: Callable[[RunConfig], dict[str, str]] | None = None
    """Variables the framework reads at import (backend choice, host device count): they go into
    the run's environment, and an in-process worker sets them before importing the adapter.
    Must not import the framework."""
    gpu_note: str | None = None
    """What keeps this framework off GPUs here (None: it trains on GPUs), for `list` and README."""

    def variables_for(self, config: RunConfig) -> dict[str, str]:
        return self.environment_variables(config) if self.environment_variables else {}

    def strategy(self, name: str) -> StrategySpec:
        for strategy in self.strategies:
            if strategy.name == name:
                return strategy
        known = ", ".join(s.name for s in self.strategies)
        raise UsageError(f"framework {self.name!r} has no strategy {name!r}; its strategies: {known}")

    @property
    def defaults(self) -> tuple[str, ...]:
        return self.default_strategies or (self.strategies[0].name,)

    def refusal(self, config: RunConfig) -> str | None:
        """Why this framework and strategy cannot run `config` (None: nothing known against it)."""
        reason = self.capabilities.refusal(config) or self.strategy(config.strategy).refusal(config)
        return f"{self.name} {reason}" if reason else None


PYTORCH = FrameworkSpec(
    name="pytorch",
    module="mgbench.frameworks.pytorch.adapter",
    strategies=(
        StrategySpec(
            "ddp",
            "torchrun",
            "DistributedDataParallel, one process per device (NCCL on GPU, gloo on CPU); staged input: "
            "on GPU the next batch is copied from pinned memory on a side stream during the step",
            exchange=DDP_EXCHANGE,
        ),
        StrategySpec(
            "ddp-unstaged",
            "torchrun",
            "as ddp, with unstaged input: each batch copied to the device by a plain .to(device) when "
            "the step takes it, so the copy is waited for (input wait) instead of overlapped",
            exchange=DDP_EXCHANGE,
        ),
        StrategySpec(
            "dp",
            "inprocess",
            "nn.DataParallel, outputs gathered on device 0 where the loss is computed",
            cpu_multi_device_note="nn.DataParallel replicates over CUDA devices only",
            no_compile_note=DATA_PARALLEL_NO_COMPILE,
        ),
        StrategySpec(
            "dp-loss",
            "inprocess",
            "nn.DataParallel with the loss computed on each device; only per-device losses gathered",
            cpu_multi_device_note="nn.DataParallel replicates over CUDA devices only",
            no_compile_note=DATA_PARALLEL_NO_COMPILE,
        ),
    ),
    import_names=("torch", "torchvision"),
    environment="pytorch",
    install_hint="make env-pytorch (or: pip install -r requirements/pytorch.txt)",
    default_strategies=("ddp",),
    capabilities=Capabilities(**TORCHVISION, loader=TORCH_LOADER, profiler="torch.profiler", compiler=TORCH_COMPILE),
)

GLUON = FrameworkSpec(
    name="gluon",
    module="mgbench.frameworks.gluon.adapter",
    strategies=(
        StrategySpec(
            "device",
            "inprocess",
            "one process drives every device; gluon.Trainer sums gradients through kvstore 'device'; "
            "unstaged input: split_and_load copies each device's slice when the step takes it",
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
    capabilities=Capabilities(
        models=("densenet121", "resnet50", "inception_v3", "tiny"),
        builders="mgbench.frameworks.gluon.models",
        precisions=("fp32",),
        data_formats=("channels_first",),
        loader="mxnet.gluon.data.DataLoader",
        no_compiler="its nets always run hybridized (MXNet's cached static graph, static_alloc and "
        "static_shape): that is Gluon's graph mode, and there is no compiler beyond it to switch on",
    ),
    gpu_note="CPU only here: PyPI's MXNet 1.9.1 is a CPU build and no MXNet build for Hopper GPUs can be installed",
)

CHAINER = FrameworkSpec(
    name="chainer",
    module="mgbench.frameworks.chainer.adapter",
    strategies=(
        StrategySpec(
            "chainermn",
            "mpirun",
            "ChainerMN, one MPI process per device: pure_nccl communicator on GPU, naive (MPI) on CPU; "
            "unstaged input: each batch sent to the device when the step takes it",
        ),
    ),
    import_names=("chainer", "chainermn", "mpi4py"),
    environment="chainer",
    install_hint="make env-chainer (needs mpiexec: apt-get install openmpi-bin libopenmpi-dev)",
    required_commands=("mpiexec",),
    capabilities=Capabilities(
        models=("densenet121", "resnet50", "tiny"),
        builders="mgbench.frameworks.chainer.models",
        precisions=("fp32",),
        data_formats=("channels_first",),
        loader="chainer.iterators.MultiprocessIterator",
        no_compiler="Chainer runs define-by-run only and has no graph compiler",
    ),
)

HOROVOD = FrameworkSpec(
    name="horovod",
    module="mgbench.frameworks.horovod.adapter",
    strategies=(
        StrategySpec(
            "hvd",
            "horovodrun",
            "Horovod over PyTorch: DistributedOptimizer all-reduce, one process per device (NCCL on GPU, gloo "
            "on CPU); input staged as pytorch's ddp (torch's DataLoader, side-stream copy on GPU)",
            exchange=HOROVOD_EXCHANGE,
        ),
    ),
    import_names=("horovod", "torch", "torchvision"),
    environment="horovod",
    packages_from="pytorch",
    install_hint="make env-horovod (builds Horovod 0.28.1 from source against torch: ~7 min on 2 cores, once)",
    post_install="scripts/build_horovod.sh",
    capabilities=Capabilities(**TORCHVISION, loader=TORCH_LOADER, profiler="torch.profiler", compiler=TORCH_COMPILE),
)

KERAS_CATALOGUE = dict(
    models=("densenet121", "resnet50", "inception_v3", "tiny"),
    builders="mgbench.frameworks.keras.models",
    model_data_formats={"densenet121": ("channels_last",)},
    parameter_offsets={"resnet50": 26_560, "inception_v3": -17_216},
    tensor_offsets={"resnet50": 53, "inception_v3": -94},
)
"""The Keras family's builder table, which its four frameworks share. keras.applications' DenseNet121 refuses channels_first; its ResNet-50 gives every convolution
a bias (+26,560 parameters, +53 tensors) and its Inception-v3's batch-norms have no gamma
(-17,216 parameters, -94 tensors)."""

KERAS_XLA = Compiler(
    "xla",
    one_device_note="Keras compiles its whole step, the update of the variables mirrored on every device "
    "included, as one XLA function, which cannot reach the variables' copies on other devices",
)
"""Keras' `jit_compile=True` under tf.distribute (why its `"auto"` leaves XLA off there)."""
CENTRAL_STORAGE_NO_COMPILE = (
    "the variables live on the CPU and the step on the devices, and an XLA-compiled step cannot "
    "read variables held on another device"
)

UNSTAGED_NO_DATA_ON_DEVICE = (
    "its input is the host-to-device copy in line with each step, which data kept on the devices "
    "removes: that is the staged strategy with --data-on-device"
)
KERAS_TF_STAGING = (
    "staged: the input pipeline (the synthetic pool, or tf.data over the dataset) distributed by the "
    "strategy and prefetched into each replica's device"
)

KERAS_TF = FrameworkSpec(
    name="keras-tf",
    module="mgbench.frameworks.keras_tf.adapter",
    strategies=(
        StrategySpec("mirrored", "inprocess", f"Keras 3 over TF, tf.distribute.MirroredStrategy; {KERAS_TF_STAGING}"),
        StrategySpec(
            "mirrored-unstaged",
            "inprocess",
            "as mirrored, host batches sliced per replica and copied inside the step",
            no_data_on_device_note=UNSTAGED_NO_DATA_ON_DEVICE,
        ),
        StrategySpec(
            "central-storage",
            "inprocess",
            f"variables on the CPU, compute mirrored on the devices (parameter server on CPU); {KERAS_TF_STAGING}",
            no_compile_note=CENTRAL_STORAGE_NO_COMPILE,
        ),
        StrategySpec(
            "central-storage-unstaged",
            "inprocess",
            "as central-storage, host batches sliced per replica and copied inside the step",
            no_compile_note=CENTRAL_STORAGE_NO_COMPILE,
            no_data_on_device_note=UNSTAGED_NO_DATA_ON_DEVICE,
        ),
    ),
    import_names=("keras", "tensorflow"),
    environment="keras-tf",
    install_hint="make env-keras-tf (or: mgbench setup keras-tf)",
    environment_variables=tensorflow_variables,
    default_strategies=("mirrored",),
    capabilities=Capabilities(loader="tf.data", compiler=KERAS_XLA, **KERAS_CATALOGUE),
)

KERAS_JAX = FrameworkSpec(
    name="keras-jax",
    module="mgbench.frameworks.keras_jax.adapter",
    strategies=(
        StrategySpec(
            "jax-dp",
            "inprocess",
            "Keras 3 over JAX, keras.distribution.DataParallel: Keras' jitted step on a held state, "
            "batches sharded onto the devices one step ahead",
            exchange=XLA_EXCHANGE,
            dispatch=ONE_PROCESS_PER_NODE,
        ),
        StrategySpec(
            "jax-dp-on-batch",
            "inprocess",
            "as jax-dp, but model.train_on_batch on the pre-sharded batches (variables synced every step)",
            exchange=XLA_EXCHANGE,
            dispatch=ONE_PROCESS_PER_NODE,
        ),
        StrategySpec(
            "jax-shard-map",
            "inprocess",
            "Keras 3 over JAX, one device's step mapped over the devices with jax.shard_map: local "
            "batch-norm statistics as in DDP (jax-dp's DataParallel syncs them), gradients averaged by pmean; "
            "staged: each batch sharded onto the devices one step ahead, from page-locked host memory",
            exchange=XLA_EXCHANGE,
            dispatch=ONE_PROCESS_PER_NODE,
        ),
        StrategySpec(
            "jax-shard-map-unstaged",
            "inprocess",
            "as jax-shard-map, each batch sharded onto the devices from host arrays when the step takes it",
            no_data_on_device_note=UNSTAGED_NO_DATA_ON_DEVICE,
            exchange=XLA_EXCHANGE,
            dispatch=ONE_PROCESS_PER_NODE,
        ),
    ),
    import_names=("keras", "jax"),
    environment="keras-jax",
    install_hint="make env-keras-jax (or: pip install -r requirements/keras-jax.txt)",
    environment_variables=jax_variables,
    default_strategies=("jax-shard-map",),
    capabilities=Capabilities(
        loader="keras.utils.PyDataset",
        profiler="jax.profiler",
        compiler=Compiler("xla", always=True),
        **KERAS_CATALOGUE,
    ),
)

KERAS_TORCH = FrameworkSpec(
    name="keras-torch",
    module="mgbench.frameworks.keras_torch.adapter",
    strategies=(
        StrategySpec(
            "ddp",
            "torchrun",
            "Keras 3 over PyTorch: the Keras model (a torch.nn.Module) in DistributedDataParallel, "
            "one process per device, custom loop (Keras' torch backend has no keras.distribution); "
            "staged: on GPUs each batch copied from pinned memory on a side stream one step ahead",
            exchange=DDP_EXCHANGE,
        ),
        StrategySpec(
            "ddp-unstaged",
            "torchrun",
            "as ddp, each batch copied to the device with a plain .to(device) when the step takes it",
            no_data_on_device_note=UNSTAGED_NO_DATA_ON_DEVICE,
            exchange=DDP_EXCHANGE,
        ),
    ),
    import_names=("keras", "torch"),
    environment="keras-torch",
    packages_from="pytorch",
    install_hint="make env-keras-torch (or: pip install -r requirements/keras-torch.txt)",
    environment_variables=torch_variables,
    default_strategies=("ddp",),
    capabilities=Capabilities(
        loader="keras.utils.PyDataset", profiler="torch.profiler", compiler=TORCH_COMPILE, **KERAS_CATALOGUE
    ),
)

TENSORFLOW = FrameworkSpec(
    name="tensorflow",
    module="mgbench.frameworks.tensorflow.adapter",
    strategies=(
        StrategySpec(
            "mirrored",
            "inprocess",
            f"custom loop: tf.function + strategy.run under MirroredStrategy; {KERAS_TF_STAGING}",
        ),
        StrategySpec(
            "mirrored-unstaged",
            "inprocess",
            "as mirrored, host batches sliced per replica and copied inside the step",
            no_data_on_device_note=UNSTAGED_NO_DATA_ON_DEVICE,
        ),
    ),
    import_names=("keras", "tensorflow"),
    environment="keras-tf",
    install_hint="make env-keras-tf (or: mgbench setup tensorflow)",
    environment_variables=tensorflow_variables,
    capabilities=Capabilities(loader="tf.data", compiler=XLA_JIT, **KERAS_CATALOGUE),
)

BUILTIN: tuple[FrameworkSpec, ...] = (PYTORCH, KERAS_TF, KERAS_JAX, KERAS_TORCH, TENSORFLOW, GLUON, CHAINER, HOROVOD)
FAMILIES: dict[str, tuple[str, ...]] = {"keras": ("keras-tf", "keras-jax", "keras-torch")}
"""Names that stand for several frameworks: `--frameworks keras` is Keras 3 on every backend."""


def registered() -> dict[str, FrameworkSpec]:
    """Built-in frameworks plus those named in MGBENCH_PLUGINS."""
    specs = {spec.name: spec for spec in BUILTIN}
    for module_name in filter(None, (name.strip() for name in os.environ.get("MGBENCH_PLUGINS", "").split(","))):
        plugin = plugin_spec(module_name)
        specs[plugin.name] = plugin
    return specs


def plugin_spec(module_name: str) -> FrameworkSpec:
    """The `FRAMEWORK` a plugin module defines. A module that is missing, raises while it is
    imported or defines no `FrameworkSpec` is one UsageError naming it: every verb, `list`
    included, reads the registry, and a plugin's traceback would hide which setting broke it."""
    where = f"MGBENCH_PLUGINS names {module_name!r}"
    try:
        plugin = importlib.import_module(module_name)
    except Exception as error:  # a plugin is third-party code: any exception it raises at import
        raise UsageError(f"{where}, which cannot be imported: {type(error).__name__}: {error}") from None
    spec = getattr(plugin, "FRAMEWORK", None)
    if not isinstance(spec, FrameworkSpec):
        raise UsageError(f"{where}, which defines no FRAMEWORK (a FrameworkSpec)")
    return spec


def check_compile_mode(mode: str) -> str:
    """`mode` when some registered framework compiles in it; else one UsageError naming the modes
    of each framework. A mode no compiler has is a typo, refused before anything is planned (it
    would only make `unsupported` rows); a mode one named framework has and another lacks stays
    that other's `unsupported` row, so one compare can ask torch's `reduce-overhead` beside
    frameworks that XLA compiles."""
    offered: dict[str, list[str]] = {}
    for spec in registered().values():
        compiler = spec.capabilities.compiler
        if compiler is not None and mode in compiler.modes:
            return mode
        modes = f"{compiler.name}: {', '.join(compiler.modes)}" if compiler else "no compiler"
        offered.setdefault(modes, []).append(spec.name)
    listed = "; ".join(f"{', '.join(names)} ({modes})" for modes, names in offered.items())
    raise UsageError(f"unknown mode {mode!r}; the modes of each framework: {listed}")


def framework_spec(name: str) -> FrameworkSpec:
    specs = registered()
    try:
        return specs[name]
    except KeyError:
        families = "; families: " + ", ".join(f"{k} = {','.join(v)}" for k, v in FAMILIES.items())
        raise UsageError(f"unknown framework {name!r}; known frameworks: {', '.join(specs)}{families}") from None


def expand_frameworks(names: list[str]) -> list[tuple[str, str | None]]:
    """Each framework a `--frameworks` list names, with the family it came through (None when
    named directly), in order and without repeats; unknown names fail here."""
    expanded: list[tuple[str, str | None]] = []
    for name in names:
        members = (
            [(member, name) for member in FAMILIES[name]] if name in FAMILIES else [(framework_spec(name).name, None)]
        )
        expanded += [member for member in members if member[0] not in [seen for seen, _ in expanded]]
    return expanded


def create_trainer(framework: str, strategy: str) -> Adapter:
    """Import the adapter (and so its framework) and make a trainer for one strategy."""
    spec = framework_spec(framework)
    spec.strategy(strategy)
    adapter = importlib.import_module(spec.module)
    return adapter.create_trainer(strategy)
