"""What a framework declares about itself, without importing it: the spec types.

Each framework package declares its `FRAMEWORK` in its own `spec.py` with these types (its
strategies and their launchers, the models it builds and where, what else it can train); the
registry (`registry.py`) only finds those declarations and looks them up. Listing, validating
and planning runs read them and never import a framework: `compare` turns a run a spec says
cannot happen into an `unsupported` row before launching anything, and adapters do not repeat it.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mgbench.core.collectives import Communication
from mgbench.core.config import RunConfig
from mgbench.core.errors import UsageError, did_you_mean
from mgbench.core.job import DEFAULT_COMPILE_MODE, PRECISIONS
from mgbench.core.kinds import DataFormat
from mgbench.core.models import catalogue, model_spec
from mgbench.core.optimization import SGD
from mgbench.frameworks.exchange import Dispatch, Exchange
from mgbench.frameworks.memory import DeviceMemory

LauncherKey = str
"""The name a strategy gives the launcher that starts its processes: `mgbench.runner.launchers`
(above this layer) maps it to the launcher's object, and a test holds every declared one to it."""
UNSTAGED_SUFFIX = "-unstaged"
"""What names a staged strategy's unstaged twin (`with_unstaged_twin`), after the staged one's name."""
UNSTAGED_NO_DATA_ON_DEVICE = (
    "its input is the host-to-device copy in line with each step, which data kept on the devices "
    "removes: that is the staged strategy with --data-on-device"
)


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
        if config.job.compile is None:
            return None
        if config.job.compile not in self.modes:
            return f"compiles with {self.name} in mode {', '.join(self.modes)} only, not {config.job.compile}"
        if config.devices > 1 and self.one_device_note:
            return f"compiles with {self.name} on one device only: {self.one_device_note}"
        return None


BIASED_MOVING_VARIANCE = (
    "batch-norm's moving variance averages each batch's biased variance (torch's and Chainer's the "
    "unbiased one), so evaluation after training differs slightly; training steps do not"
)
"""What Keras' and Gluon's batch-norm cannot be set to match (`ModelBuilders.unmatched`)."""
BATCH_NORM_UNMATCHED: dict[str, tuple[str, ...]] = {
    model: (BIASED_MOVING_VARIANCE,) for model in ("densenet121", "resnet50", "inception_v3")
}
"""`BIASED_MOVING_VARIANCE` for the catalogue's models with batch-norm (`tiny` and `vit_b_16` have none)."""


@dataclass(frozen=True)
class ModelBuilders:
    """The catalogue models one builder module builds, and how its builds differ from the
    catalogue's reference architectures, declared without importing the module.

    `module` (a framework's `models.py`) builds model `m` with its module-level callable named
    as `m`'s family (`ModelSpec.family`: its own name, or `gpt2` for every GPT-2 size): no table pairs names with builders, so a framework package adds a model by naming it
    in `models` and defining its builder, and the frameworks that train through the same module
    (the Keras family, Horovod over PyTorch) share this one declaration. The contract test
    holds the module's builders to `models`."""

    module: str
    models: tuple[str, ...]
    """The catalogue models it builds: declared here so that planning never imports it, and
    never defaulted to the whole catalogue."""
    data_formats: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Models that accept fewer data formats than the framework (Keras' DenseNet: channels_last)."""
    parameter_offsets: dict[str, int] = field(default_factory=dict)
    """Trainable parameters minus the model catalogue's reference count, where the module's
    architecture differs (keras.applications' ResNet-50 gives convolutions a bias)."""
    tensor_offsets: dict[str, int] = field(default_factory=dict)
    """Trainable tensors minus the catalogue's reference count, for the same differences."""
    unmatched: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """What its build of each model cannot set as the shared job declares it
    (`ModelSpec.hyperparameters` and `optimization`, torch's conventions), one sentence each: the model's rows name them."""

    def builder(self, model: str, framework: str) -> Callable[..., Any]:
        """`model`'s builder (importing the module: adapters only), or one UsageError naming
        what it builds: the registry refuses an undeclared model before launching, so this is
        reached only by a caller that skipped it."""
        if model not in self.models:
            raise UsageError(f"{framework} has no model {model!r}; it builds {', '.join(self.models)}")
        return getattr(importlib.import_module(self.module), model_spec(model).family)

    def defined(self) -> list[str]:
        """The catalogue models the module defines a builder for (its family's callable),
        importing it (the contract test compares them with `models`)."""
        module = importlib.import_module(self.module)
        return [name for name, spec in catalogue().items() if callable(getattr(module, spec.family, None))]


@dataclass(frozen=True)
class Capabilities:
    """What an adapter can train, declared without importing its framework."""

    builders: ModelBuilders
    """The models it builds, through which module, and how they differ from the catalogue."""
    precisions: tuple[str, ...] = PRECISIONS
    data_formats: tuple[str, ...] = ("channels_last", "channels_first")
    """The first is the framework's default: one it trains for every model it has (channels_last
    where the framework can: Keras' applications need it, and tensor cores prefer it)."""
    loader: str | None = None
    """The framework's native loader, by its own name (e.g. `torch.utils.data.DataLoader`), that
    reads `--dataset chestxray:/labels:/imagefolder:` and trains `--epochs`; rows of real data
    record it. None: synthetic data only."""
    profiler: str | None = None
    """The profiler `--profile` runs under (None: the framework has none here)."""
    compiler: Compiler | None = None
    """What `--compile` does (None: the framework has no compiler here, `no_compiler` says why)."""
    no_compiler: str = "the framework has no compiler here"
    fused_optimizers: Mapping[str, str] = field(default_factory=dict)
    """The optimizer kinds (`core.optimization`) whose own fused step `--fused-optimizer` switches
    on, each with that step's name (`torch.optim.AdamW(fused=True)`); a kind absent has none here."""
    optimizers: tuple[str, ...] = (SGD.kind,)
    """The optimizer kinds (`core.optimization`) its `build_optimizer` steps as torch's do: a model
    that declares another is refused before launching."""
    gpu_decoder: str | None = None
    """What decodes JPEGs on the training device under `--decode gpu`, by its own name (e.g.
    `nvJPEG (torchvision.io.decode_jpeg)`); None: its loader decodes on the host only, and
    `no_gpu_decoder` says why."""
    no_gpu_decoder: str = "its loader decodes on the host only here"
    splits_decode: bool = False
    """Its loader's workers decode part of each batch on the host under `--decode-host-share`
    while the device decodes the rest; False: the device decodes whole batches of files."""

    @property
    def models(self) -> tuple[str, ...]:
        return self.builders.models

    @property
    def model_data_formats(self) -> dict[str, tuple[str, ...]]:
        return self.builders.data_formats

    @property
    def parameter_offsets(self) -> dict[str, int]:
        return self.builders.parameter_offsets

    def refusal(self, config: RunConfig) -> str | None:
        """Why this adapter cannot train `config`, or None when it can."""
        if config.job.model not in self.models:
            return f"has no {config.job.model} (models: {', '.join(self.models)})"
        if config.job.precision not in self.precisions:
            return f"trains in {', '.join(self.precisions)} only, not {config.job.precision}"
        formats = self.model_data_formats.get(config.job.model, self.data_formats)
        if config.job.input.has_layout and config.job.data_format not in formats:
            return f"trains {config.job.model} in {', '.join(formats)} only, not {config.job.data_format}"
        if config.job.dataset != "synthetic" and self.loader is None:
            return f"has no loader for real data (dataset {config.job.dataset!r}); it trains on synthetic data only"
        if (optimizer := config.job.spec.optimization.optimizer.kind) not in self.optimizers:
            return (
                f"cannot step {config.job.model}'s optimizer {optimizer} as torch's does here "
                f"(it builds {', '.join(self.optimizers)})"
            )
        if config.job.fused_optimizer and optimizer not in self.fused_optimizers:
            return f"has no fused optimizer step for {optimizer} here (--fused-optimizer)"
        if config.job.compile is not None and self.compiler is None:
            return f"cannot compile its step (--compile): {self.no_compiler}"
        if config.job.decode.on_device and self.gpu_decoder is None:
            return f"cannot decode on the GPU (--decode gpu): {self.no_gpu_decoder}"
        if config.job.decode_host_share and not self.splits_decode:
            return (
                "cannot split a batch's decode between host and GPU (--decode-host-share): "
                "its loader hands the GPU whole batches of files"
            )
        return self.compiler.refusal(config) if self.compiler else None

    def compiled_by(self, config: RunConfig) -> str | None:
        """What compiles `config`'s training step, as its row records it (None: nothing)."""
        return self.compiler.label(config.job.compile) if self.compiler else None

    def default_data_format(self, model: str) -> DataFormat | None:
        """The format this framework trains `model` in unless the job names one; None where the
        model's input has no layout (tokens)."""
        if not model_spec(model).input.has_layout:
            return None
        return DataFormat(self.model_data_formats.get(model, self.data_formats)[0])

    def expected_parameters(self, model: str, image_size: int | None = None) -> int:
        """The trainable parameter count this framework's build of `model` must have at
        `image_size` px (None: the model's own size; a language model's count has no size)."""
        spec = model_spec(model)
        return spec.parameters_at(image_size or spec.input.extent) + self.parameter_offsets.get(model, 0)

    def expected_tensors(self, model: str) -> int:
        """The trainable tensors this framework's build of `model` has."""
        return model_spec(model).reference_tensors + self.builders.tensor_offsets.get(model, 0)


@dataclass(frozen=True)
class StrategySpec:
    name: str
    launcher: LauncherKey
    description: str
    cpu_multi_device_note: str | None = None
    """Why N > 1 CPU devices cannot stand in for GPUs with this strategy (None: they can)."""
    no_compile_note: str | None = None
    """Why this strategy cannot run a compiled step where its framework can (None: it can)."""
    no_data_on_device_note: str | None = None
    """Why this strategy cannot keep the synthetic batches on the devices (`--data-on-device`);
    None: it does (it places the pool once and cycles it)."""
    communication: Communication | None = None
    """What it shards and the collectives it runs each step (`mgbench.core.collectives`), which
    its rows' expected communication and `mgbench project` price (None: not declared, and neither
    is priced: each says why)."""
    exchange: Exchange | None = None
    """How it issues those collectives (buckets, beside the passes or not), for `mgbench project`
    (None: not declared, projected as DDP's buckets)."""
    dispatch: Dispatch | None = None
    """Which process does each device's host work, for `mgbench project` (None: not declared,
    projected as a process per device)."""
    staged: bool = True
    """Its input is staged: batch k+1 is copied to the devices while step k runs. False: each
    batch is copied when its step takes it (gluon's and chainer's strategies, and every twin
    `with_unstaged_twin` derives: the staged vs unstaged experiment)."""
    twin_of: str | None = None
    """The staged strategy this one is the unstaged twin of (None: a strategy of its own)."""

    @property
    def kind(self) -> str:
        """The strategy whose step this one runs (its staged twin's name, or its own): what an
        adapter keys its strategy objects by, so that a twin differs in its input only."""
        return self.twin_of or self.name

    def refusal(self, config: RunConfig) -> str | None:
        if not config.job.device_kind.on_gpu and config.devices > 1 and self.cpu_multi_device_note:
            return f"needs GPUs: {self.cpu_multi_device_note}"
        if config.job.data_on_device and self.no_data_on_device_note:
            return f"cannot keep its input on the devices (--data-on-device): {self.no_data_on_device_note}"
        if config.job.compile is not None and self.no_compile_note:
            return f"cannot compile {self.name}'s step (--compile): {self.no_compile_note}"
        return None


def with_unstaged_twin(
    staged: StrategySpec, how: str, no_data_on_device_note: str | None = UNSTAGED_NO_DATA_ON_DEVICE
) -> tuple[StrategySpec, StrategySpec]:
    """`staged` and its unstaged twin, named `<name>-unstaged`: the same step, launcher, notes and
    gradient exchange, with each batch copied to the devices when the step takes it (`how` says
    how, after "as <name>, "). The twin refuses `--data-on-device` (`no_data_on_device_note`):
    the copy in line is what it measures, and data kept on the devices is the staged one's."""
    twin = dataclasses.replace(
        staged,
        name=f"{staged.name}{UNSTAGED_SUFFIX}",
        description=f"as {staged.name}, {how}",
        no_data_on_device_note=no_data_on_device_note,
        staged=False,
        twin_of=staged.name,
    )
    return staged, twin


DEVICE_DECODE_QUEUES = {"CUDA_DEVICE_MAX_CONNECTIONS": "32"}
"""With `--decode gpu` the step shares its GPU with the decoder's streams (nvJPEG's own, the crop's
side stream). CUDA maps a process's streams onto a few hardware queues (8 by default), and work
on two streams that share a queue runs in the order it was queued: a decode copy or kernel queued
behind a compiled step's graph waits for the graph's kernels before it, batch after batch, and
the step then waits for its input. 32, CUDA's most, gives each stream a queue of its own. A
value the user set stands."""


@dataclass(frozen=True)
class FrameworkSpec:
    name: str
    module: str
    """The adapter module: it imports the framework and defines `create_adapter(strategy)`."""
    strategies: tuple[StrategySpec, ...]
    import_names: tuple[str, ...]
    environment: str
    """Name of the virtual environment under `.venvs/` and of `requirements/<environment>.txt`."""
    install_hint: str
    capabilities: Capabilities
    default_strategies: tuple[str, ...] = ()
    """What `compare` runs without `--strategies`: the strategy that answers "how fast is this
    framework" (empty: the first strategy)."""
    family: str | None = None
    """A name `--frameworks` takes for this framework and the others of its family together
    (`keras`: Keras 3 on every backend); None: it is named alone."""
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
    """What keeps this framework off GPUs here (None: it trains on GPUs), for `list` and docs/frameworks.md."""
    memory: DeviceMemory = field(default_factory=DeviceMemory)
    """How it says it ran out of GPU memory, its own default batch per model where the job's does
    not fit, and how `--gpu-memory-gb` caps it (`memory.py`)."""

    def variables_for(self, config: RunConfig) -> dict[str, str]:
        """What the run's environment needs before the framework starts: its own variables, the
        memory cap's (`DeviceMemory.cap_variables`) and, decoding on the GPU, CUDA's queues."""
        variables = self.environment_variables(config) if self.environment_variables else {}
        variables.update(self.memory.cap_variables(config))
        if config.job.decode.on_device and config.job.device_kind.on_gpu:
            variables.update({name: value for name, value in DEVICE_DECODE_QUEUES.items() if name not in os.environ})
        return variables

    def strategy(self, name: str) -> StrategySpec:
        for strategy in self.strategies:
            if strategy.name == name:
                return strategy
        known = [s.name for s in self.strategies]
        guess = did_you_mean(name, known)
        raise UsageError(f"framework {self.name!r} has no strategy {name!r}{guess}; its strategies: {', '.join(known)}")

    @property
    def defaults(self) -> tuple[str, ...]:
        return self.default_strategies or (self.strategies[0].name,)

    def refusal(self, config: RunConfig) -> str | None:
        """Why this framework and strategy cannot run `config` (None: nothing known against it)."""
        reason = self.capabilities.refusal(config) or self.strategy(config.strategy).refusal(config)
        return f"{self.name} {reason}" if reason else None
