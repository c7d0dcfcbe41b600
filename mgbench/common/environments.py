"""Per-framework virtual environments: where they live, whether a framework is installed, set-up.

Frameworks pin incompatible stacks (MXNet and Chainer need numpy 1.23, TensorFlow and torch
want numpy 2), so each can get `.venvs/<env>` built from `requirements/<env>.txt` plus mgbench
itself. Checks run in the framework's interpreter, by import spec only, never importing it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from mgbench.common.errors import UsageError
from mgbench.common.launch import environment_python, interpreter_for, project_root, venvs_dir
from mgbench.frameworks import FrameworkSpec, registered

_PROBE = """
import importlib.util, importlib.metadata, json, sys
names = sys.argv[1:]
found = {n: importlib.util.find_spec(n) is not None for n in names}
versions = {}
distributions = importlib.metadata.packages_distributions()
for n in names:
    for dist in distributions.get(n, [n]):
        try:
            versions[n] = importlib.metadata.version(dist)
            break
        except importlib.metadata.PackageNotFoundError:
            pass
print(json.dumps({"found": found, "versions": versions}))
"""


@dataclass(frozen=True)
class Installation:
    interpreter: str
    installed: bool
    versions: dict[str, str]
    missing: list[str]


def inspect_installation(spec: FrameworkSpec) -> Installation:
    """Whether the framework's interpreter can import what the adapter needs, and which versions."""
    interpreter = interpreter_for(spec)
    try:
        completed = subprocess.run(
            [interpreter, "-c", _PROBE, *spec.import_names], capture_output=True, text=True, timeout=60, check=True
        )
        probe = json.loads(completed.stdout)
    except (subprocess.SubprocessError, OSError, ValueError):
        return Installation(interpreter, False, {}, list(spec.import_names))
    missing = [name for name, ok in probe["found"].items() if not ok]
    return Installation(interpreter, not missing, probe["versions"], missing)


def spec_for_setup(name: str) -> FrameworkSpec:
    """A framework by name, or by its environment's name (`keras-tf` serves keras and tensorflow)."""
    specs = registered()
    if name in specs:
        return specs[name]
    for spec in specs.values():
        if spec.environment == name:
            return spec
    environments = sorted({spec.environment for spec in specs.values()})
    raise UsageError(f"unknown framework {name!r} (nor an environment); frameworks: {', '.join(specs)}; "
                     f"environments: {', '.join(environments)}")


def requirements_file(spec: FrameworkSpec) -> Path:
    return project_root() / "requirements" / f"{spec.environment}.txt"


def create_environment(spec: FrameworkSpec, python: str | None = None) -> Path:
    """Build `.venvs/<env>` from the requirements file plus mgbench; returns its interpreter."""
    requirements = requirements_file(spec)
    if not requirements.exists():
        raise UsageError(f"no requirements file for {spec.name}: {requirements}")
    target = venvs_dir() / spec.environment
    steps = [
        [python or sys.executable, "-m", "venv", str(target)],
        [str(environment_python(spec)), "-m", "pip", "install", "-r", str(requirements)],
        [str(environment_python(spec)), "-m", "pip", "install", "-e", str(project_root())],
    ]
    for step in steps:
        print("$", " ".join(step), file=sys.stderr, flush=True)
        if subprocess.run(step).returncode != 0:
            raise UsageError(f"setting up {spec.name} failed at: {' '.join(step)}")
    return environment_python(spec)
