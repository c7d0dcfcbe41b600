"""The framework registry: finds each framework's declaration and looks frameworks up, without
importing any framework.

A framework declares itself in one module, `FRAMEWORK: FrameworkSpec` (`specs.py` holds the
types): a built-in one in its package's `spec.py`, a third-party one in a module named in
`MGBENCH_PLUGINS` (`mgbench.core.plugins`; the spec's `module` names its adapter, which
defines `create_adapter`). Both are read the same way, so listing, validating and planning runs
treat them alike and never import a framework; only `create_adapter`, in a worker, imports one.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from mgbench.core.errors import UsageError, did_you_mean
from mgbench.core.plugins import plugin_modules, plugin_named
from mgbench.frameworks.specs import FrameworkSpec
from mgbench.training.protocol import Adapter

BUILTIN_PACKAGES = ("pytorch", "keras_tf", "keras_jax", "keras_torch", "tensorflow", "gluon", "chainer", "horovod")
"""The built-in framework packages, in the order `mgbench list` shows them (and `compare` runs a
family's members): each declares its `FRAMEWORK` in its `spec.py`."""
ALL_STRATEGIES = "all"
"""`--strategies all`: every strategy of every named framework, not only its default ones."""


def framework_of(module: ModuleType, where: str) -> FrameworkSpec:
    """The `FRAMEWORK` that `module` declares, or one UsageError saying `where` it was named."""
    spec = getattr(module, "FRAMEWORK", None)
    if not isinstance(spec, FrameworkSpec):
        raise UsageError(f"{where}, which defines no FRAMEWORK (a FrameworkSpec)")
    return spec


BUILTIN: tuple[FrameworkSpec, ...] = tuple(
    framework_of(importlib.import_module(name), name)
    for name in (f"mgbench.frameworks.{package}.spec" for package in BUILTIN_PACKAGES)
)


def registered() -> dict[str, FrameworkSpec]:
    """Built-in frameworks plus those named in MGBENCH_PLUGINS."""
    specs = {spec.name: spec for spec in BUILTIN}
    for module in plugin_modules():
        plugin = framework_of(module, plugin_named(module.__name__))
        specs[plugin.name] = plugin
    return specs


def families(specs: dict[str, FrameworkSpec]) -> dict[str, tuple[str, ...]]:
    """Names that stand for several frameworks (`--frameworks keras` is Keras 3 on every
    backend), from the family each spec declares, its members in registry order."""
    found: dict[str, tuple[str, ...]] = {}
    for spec in specs.values():
        if spec.family:
            found[spec.family] = (*found.get(spec.family, ()), spec.name)
    return found


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
        named = families(specs)
        listed = "; families: " + ", ".join(f"{k} = {','.join(v)}" for k, v in named.items())
        guess = did_you_mean(name, [*specs, *named])
        raise UsageError(f"unknown framework {name!r}{guess}; known frameworks: {', '.join(specs)}{listed}") from None


def expand_frameworks(names: list[str]) -> list[tuple[str, str | None]]:
    """Each framework a `--frameworks` list names, with the family it came through (None when
    named directly), in order and without repeats; unknown names fail here."""
    named = families(registered())
    expanded: list[tuple[str, str | None]] = []
    for name in names:
        members = [(member, name) for member in named[name]] if name in named else [(framework_spec(name).name, None)]
        expanded += [member for member in members if member[0] not in [seen for seen, _ in expanded]]
    return expanded


def create_adapter(framework: str, strategy: str) -> Adapter:
    """Import the adapter module (and so its framework) and make its adapter for one strategy."""
    spec = framework_spec(framework)
    spec.strategy(strategy)
    adapter = importlib.import_module(spec.module)
    return adapter.create_adapter(strategy)
