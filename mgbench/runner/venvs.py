"""Per-framework virtual environments: where they live, whether a framework is installed, set-up.

Frameworks pin incompatible stacks (MXNet and Chainer need numpy 1.23, TensorFlow and torch
want numpy 2), so each can get `.venvs/<env>` built from `requirements/<env>.txt` plus mgbench
itself. Checks run in the framework's interpreter, by import spec only, never importing it.

An environment whose sdists need pinned build tools (Chainer's setup.py needs an old setuptools)
gets them from `requirements/<env>-build-constraints.txt`. Built wheels land in pip's wheel
cache, so rebuilding an environment does not build them again. An environment whose framework
names `packages_from` sees that framework's packages beneath its own, so torch is installed once.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from mgbench.core.errors import UsageError, did_you_mean
from mgbench.frameworks.registry import registered
from mgbench.frameworks.specs import FrameworkSpec
from mgbench.runner.launch import environment_python, interpreter_for, isolated_environment, project_root, venvs_dir

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
versions["python"] = sys.version.split()[0]
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
            [interpreter, "-c", _PROBE, *spec.import_names],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
            env=isolated_environment(),
        )
        probe = json.loads(completed.stdout)
    except (subprocess.SubprocessError, OSError, ValueError):
        return Installation(interpreter, False, {}, list(spec.import_names))
    missing = [name for name, ok in probe["found"].items() if not ok]
    missing += [command for command in spec.required_commands if shutil.which(command) is None]
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
    raise UsageError(
        f"unknown framework {name!r} (nor an environment){did_you_mean(name, [*specs, *environments])}; "
        f"frameworks: {', '.join(specs)}; "
        f"environments: {', '.join(environments)}"
    )


def requirements_file(spec: FrameworkSpec) -> Path:
    return project_root() / "requirements" / f"{spec.environment}.txt"


def build_constraints_file(spec: FrameworkSpec) -> Path:
    return project_root() / "requirements" / f"{spec.environment}-build-constraints.txt"


def pip_environment(spec: FrameworkSpec) -> dict[str, str]:
    """pip's environment: build constraints where the framework has them.

    pip before 25.3 applies PIP_CONSTRAINT inside its isolated build environments (and to the
    install itself); 25.3 and later read PIP_BUILD_CONSTRAINT for builds. Both are set so that
    whichever pip the new environment has, the sdists build with the pinned tools.
    """
    env = dict(os.environ)
    constraints = build_constraints_file(spec)
    if constraints.exists():
        env["PIP_CONSTRAINT"] = env["PIP_BUILD_CONSTRAINT"] = str(constraints)
    return env


_SITE_PATHS = """
import json, sys, sysconfig
paths = sysconfig.get_paths()
print(json.dumps({"version": list(sys.version_info[:2]), "site": sorted({paths["purelib"], paths["platlib"]})}))
"""

LAYER_FILE = "mgbench-packages-from.pth"


def site_packages(interpreter: str) -> tuple[tuple[int, int], list[str]]:
    """An interpreter's Python version and its site-packages folders."""
    completed = subprocess.run(
        [interpreter, "-c", _SITE_PATHS], capture_output=True, text=True, check=True, env=isolated_environment()
    )
    found = json.loads(completed.stdout)
    return tuple(found["version"]), found["site"]


def layer_environment(spec: FrameworkSpec, interpreter: str) -> list[str]:
    """Put the packages of `spec.packages_from`'s environment beneath this new one.

    A `.pth` line appends them to `sys.path` after the environment's own site-packages, so pip
    counts what they hold as installed and what this environment installs itself shadows them.
    Only an interpreter of the same Python version can share compiled packages; any other is
    left out and the pins are installed here. Returns the folders added.
    """
    if spec.packages_from is None:
        return []
    lower = interpreter_for(registered()[spec.packages_from])
    lower_version, lower_sites = site_packages(lower)
    version, sites = site_packages(interpreter)
    if lower_version != version:
        print(
            f"{spec.name}: {lower} is Python {lower_version}, not {version}: installing its own packages",
            file=sys.stderr,
        )
        return []
    shared = [site for site in lower_sites if site not in sites]
    Path(sites[0], LAYER_FILE).write_text("".join(f"{site}\n" for site in shared))
    return shared


def create_environment(spec: FrameworkSpec, python: str | None = None) -> Path:
    """Build `.venvs/<env>` anew from the requirements file plus mgbench; returns its interpreter.

    The folder is cleared first (`venv --clear`), so a package an earlier build installed that
    the lower environment now provides (`packages_from`) does not stay behind as a second copy.
    The requirements and mgbench are installed in one pip call, so mgbench's own dependencies
    are resolved against the framework's pins (numpy 1.23.5 stays numpy 1.23.5).
    """
    requirements = requirements_file(spec)
    if not requirements.exists():
        raise UsageError(f"no requirements file for {spec.name}: {requirements}")
    target = venvs_dir() / spec.environment
    interpreter = str(environment_python(spec))
    env = pip_environment(spec)
    # `-P`: venv and pip import nothing from the working directory; unlike PYTHONSAFEPATH it is
    # not inherited, so the build scripts pip runs see their own folder on sys.path as they expect.
    run_step([python or sys.executable, "-P", "-m", "venv", "--clear", str(target)], spec, env)
    for shared in layer_environment(spec, interpreter):
        print(f"{spec.name}: packages already in {shared} are used from there", file=sys.stderr, flush=True)
    run_step([interpreter, "-P", "-m", "pip", "install", "-r", str(requirements), "-e", str(project_root())], spec, env)
    if spec.post_install:
        run_step([str(project_root() / spec.post_install), interpreter], spec, env)
    return environment_python(spec)


def run_step(step: list[str], spec: FrameworkSpec, env: dict[str, str]) -> None:
    """Run one step of a setup, its output shown; one that fails, or cannot start (an interpreter
    that does not exist), is one UsageError naming it."""
    print("$", " ".join(step), file=sys.stderr, flush=True)
    try:
        failed = subprocess.run(step, env=env).returncode != 0
    except OSError as error:
        raise UsageError(f"setting up {spec.name} failed at: {' '.join(step)} ({error.strerror})") from None
    if failed:
        raise UsageError(f"setting up {spec.name} failed at: {' '.join(step)}")
