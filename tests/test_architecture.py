"""The layers docs/extending.md describes (its architecture table), read from the source's import graph.

Every `import mgbench...` in every module counts, at module level or inside a function, so a
layer cannot be crossed by deferring an import.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import mgbench
from mgbench.frameworks.registry import BUILTIN_PACKAGES

PACKAGE_ROOT = Path(mgbench.__file__).parent
LAYERS = (
    "core",
    "measure",
    "machine",
    "records",
    "training",
    "datasets",
    "frameworks",
    "projection",
    "runner",
    "reports",
    "cli",
)
"""Bottom to top: a package may import from itself and from the packages before it."""
GROUND_FLOOR = ("core", "measure", "machine", "records", "training")
"""The packages every layer above may use; together they import nothing else of mgbench."""


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def mgbench_imports(path: Path) -> set[str]:
    """Every mgbench module `path` imports, resolved to module names that exist."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
    own = module_name(path)
    return {name for name in names if name.startswith("mgbench.") and name in MODULES and name != own}


MODULES = {module_name(path): path for path in PACKAGE_ROOT.rglob("*.py")}
GRAPH = {name: mgbench_imports(path) for name, path in MODULES.items()}


def layer(name: str) -> str | None:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else None


def test_the_layers_are_the_packages_there_are() -> None:
    packages = {path.parent.name for path in PACKAGE_ROOT.glob("*/__init__.py")}
    assert sorted(LAYERS) == sorted(packages)


def test_each_layer_imports_only_itself_and_the_layers_below() -> None:
    crossings = []
    for name, imported in GRAPH.items():
        own = layer(name)
        if own is None:
            continue
        allowed = set(LAYERS[: LAYERS.index(own) + 1])
        crossings += [f"{name} -> {target}" for target in imported if layer(target) not in allowed and layer(target)]
    assert crossings == []


def test_the_ground_floor_imports_nothing_above_it() -> None:
    outside = {
        f"{name} -> {target}"
        for name, imported in GRAPH.items()
        if layer(name) in GROUND_FLOOR
        for target in imported
        if layer(target) not in GROUND_FLOOR
    }
    assert outside == set()


def test_no_import_cycle() -> None:
    """Depth-first search for a back edge; a package's `__init__` importing its own modules is a
    cycle too, so it is counted like any other edge."""
    state: dict[str, str] = {}
    cycles = []

    def visit(name: str, path: list[str]) -> None:
        state[name] = "open"
        for target in sorted(GRAPH.get(name, ())):
            if state.get(target) == "open":
                cycles.append(" -> ".join(path[path.index(target) :] + [target]) if target in path else target)
            elif target not in state:
                visit(target, [*path, target])
        state[name] = "done"

    for name in sorted(GRAPH):
        if name not in state:
            visit(name, [name])
    assert cycles == []


def test_the_graph_is_read() -> None:
    """Guards the tests above against an empty graph (a wrong root would make them pass)."""
    assert "mgbench.core.config" in GRAPH["mgbench.training.driver"]
    assert any(layer(target) == "frameworks" for target in GRAPH["mgbench.runner.orchestrator"])


FRAMEWORKS = PACKAGE_ROOT / "frameworks"
FRAMEWORK_PACKAGES = sorted(path.parent.name for path in FRAMEWORKS.glob("*/adapter.py"))
THIRD_PARTY_FRAMEWORKS = {"torch", "torchvision", "tensorflow", "jax", "jaxlib", "keras", "mxnet", "chainer", "horovod"}


def imported_packages(nodes: Iterable[ast.AST]) -> set[str]:
    """The top packages the import statements among `nodes` name."""
    names = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def top_level_imports(path: Path) -> set[str]:
    """The top packages `path` imports at module level (statements run when it is imported)."""
    return imported_packages(ast.parse(path.read_text()).body)


def test_every_framework_package_declares_itself_in_an_import_free_spec_module() -> None:
    """Each package with an adapter is the registry's and has a `spec.py`, and neither it nor any
    mgbench module it imports, however indirectly, imports a framework when it is imported."""
    assert sorted(BUILTIN_PACKAGES) == FRAMEWORK_PACKAGES
    specs = [f"mgbench.frameworks.{package}.spec" for package in FRAMEWORK_PACKAGES]
    assert [name for name in specs if name not in MODULES] == []
    reached, pending = set(), list(specs)
    while pending:
        name = pending.pop()
        if name not in reached:
            reached.add(name)
            pending += GRAPH[name]
    importing = {name: top_level_imports(MODULES[name]) & THIRD_PARTY_FRAMEWORKS for name in reached}
    assert {name: found for name, found in importing.items() if found} == {}


def test_the_runner_imports_no_framework() -> None:
    """The runner starts each framework in a process of its framework's environment and imports
    none, however deferred: neither a framework nor any module of a framework's package under
    `mgbench/frameworks/` (the framework-neutral declarations and registry beside them it may)."""
    runner = [name for name in MODULES if layer(name) == "runner"]
    found = {
        name: sorted(
            (imported_packages(ast.walk(ast.parse(MODULES[name].read_text()))) & THIRD_PARTY_FRAMEWORKS)
            | {
                target
                for target in GRAPH[name]
                if layer(target) == "frameworks" and MODULES[target].parent != FRAMEWORKS
            }
        )
        for name in runner
    }
    assert runner and {name: imported for name, imported in found.items() if imported} == {}


def test_the_unstaged_suffix_is_spelled_in_one_place() -> None:
    """Staging is a strategy's field: the suffix that names an unstaged twin is appended by the
    one function that derives the twin, and no code takes a strategy's name apart."""
    spelled = [
        name
        for name, path in MODULES.items()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and node.value == "-unstaged"
    ]
    assert spelled == ["mgbench.frameworks.specs"]


def test_chainer_is_imported_through_the_one_module_that_patches_it_first():
    """Chainer 7.8.1 imports on numpy 2 only after `compat.apply()`: every module of its package
    takes Chainer from `chainer/imports.py`, so whichever is imported first, the patches come first."""
    direct = [
        name
        for name, path in MODULES.items()
        if name.startswith("mgbench.frameworks.chainer.") and top_level_imports(path) & {"chainer", "chainermn"}
    ]
    assert direct == []
