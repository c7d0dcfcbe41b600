"""One contract test over everything registered: every framework x model x strategy.

Import-free checks run for every combination in this interpreter: the registry resolves it,
planning either accepts it with the framework's default data format or names why not, and
nothing imports a framework. Then each (framework, strategy) is launched once under its own
launcher in its own environment (skipped, naming the set-up command, where that is not built):
its builder module (`ModelBuilders.module`) defines a builder for exactly the catalogue models
its spec declares, its adapter's `setup` builds them with exactly the model catalogue's
reference parameter and tensor counts plus the framework's declared offsets, and it implements
the optional parts of the contract (real data, profiler) exactly where the registry declares them.

A framework's strategies all build through its one builder module, so the whole catalogue is
built in its first strategy only (but for the models past `PROBE_PARAMETERS`); every other
strategy builds `tiny`, which still takes that strategy's own launcher and `setup`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import TESTS, cli_env, framework_python

from mgbench.core.config import RunConfig
from mgbench.core.models import MODELS
from mgbench.frameworks.registry import BUILTIN
from mgbench.runner.launchers import LAUNCHERS, Launch, launcher_for

COMBINATIONS = [(spec, strategy.name, model) for spec in BUILTIN for strategy in spec.strategies for model in MODELS]


PROBE_PARAMETERS = 200_000_000
"""The largest model a probe builds on the CPU. The larger ones are GPT-2's medium and XL sizes:
the one builder of their family (`gpt2`, which the probe builds at 124M and at the tiny size) at
a larger shape, whose counts tests/test_gpt2.py takes from the PyTorch module built on the meta
device; built here they would hold each framework's probe for minutes and gigabytes."""


def probed_models(spec, strategy: str) -> tuple[str, ...]:
    """The models the probe of (framework, strategy) builds: the catalogue up to
    `PROBE_PARAMETERS` in the first strategy, `tiny` in the others."""
    if strategy != spec.strategies[0].name:
        return ("tiny",)
    return tuple(name for name, model in MODELS.items() if model.parameters_at(model.input.extent) <= PROBE_PARAMETERS)


PROBED = [(spec, strategy, model) for spec, strategy, model in COMBINATIONS if model in probed_models(spec, strategy)]
FRAMEWORK_MODULES = ("torch", "tensorflow", "jax", "keras", "mxnet", "chainer", "horovod")
PROBES: dict[tuple[str, str], dict] = {}


def combination_id(combination) -> str:
    spec, strategy, model = combination
    return f"{spec.name}-{strategy}-{model}"


def default_config(spec, strategy: str, model: str, devices: int = 1) -> RunConfig:
    config = RunConfig.flat(spec.name, strategy, model, devices, "cpu", 1, 1)
    return config.with_changes(data_format=spec.capabilities.default_data_format(model))


@pytest.mark.parametrize("combination", COMBINATIONS, ids=combination_id)
def test_planning_accepts_the_default_job_or_names_why_not(combination):
    spec, strategy, model = combination
    config = default_config(spec, strategy, model)
    refusal = spec.refusal(config)
    assert (refusal is None) == (model in spec.capabilities.models), refusal
    assert spec.strategy(strategy).launcher in LAUNCHERS, "a launcher key with no object in runner/launchers.py"
    assert all(isinstance(value, str) for value in spec.variables_for(config).values())


def test_planning_every_combination_and_the_cli_import_no_framework():
    code = (
        "import sys; from mgbench.cli import build_parser; from mgbench.runner.plan import plan_runs; "
        "from mgbench.frameworks.registry import BUILTIN; from mgbench.core.job import Job; build_parser(); "
        "[plan_runs(Job('densenet121', 'cpu', 1, 1), [s.name], ['all'], [1, 2], 'weak')"
        f" for s in BUILTIN]; print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in {FRAMEWORK_MODULES!r})))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=cli_env(), timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""


def probe(spec, strategy: str, tmp_path: Path) -> dict:
    """The probe's findings for one (framework, strategy), launched once per test session."""
    key = (spec.name, strategy)
    if key not in PROBES:
        python = framework_python(spec.name)
        out = tmp_path / f"{spec.name}-{strategy}.json"
        entry = [str(TESTS / "contract_probe.py"), spec.name, strategy, str(out), *probed_models(spec, strategy)]
        command = launcher_for(spec.strategy(strategy).launcher).command(Launch(python, entry=entry), 1)
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=900,
            env=cli_env(PYTHONPATH=str(TESTS.parent), OMP_NUM_THREADS="2"),
        )
        assert done.returncode == 0 and out.exists(), done.stdout[-3000:] + done.stderr[-3000:]
        PROBES[key] = json.loads(out.read_text())
    return PROBES[key]


@pytest.mark.slow
@pytest.mark.parametrize("combination", PROBED, ids=combination_id)
def test_the_adapter_builds_the_declared_model_and_implements_what_it_declares(combination, tmp_path):
    spec, strategy, model = combination
    found = probe(spec, strategy, tmp_path)
    assert found["is_adapter"]
    assert found["builders"] == sorted(spec.capabilities.models), "the builder module and the declaration differ"
    for feature, declared in found["declared"].items():
        assert set(found["implemented"][feature]) == {declared}, f"{feature}: declared {declared}"
    if model in spec.capabilities.models:
        assert found["parameters"][model] == spec.capabilities.expected_parameters(model)
        assert found["tensors"][model] == spec.capabilities.expected_tensors(model)
    else:
        assert model not in found["parameters"]
