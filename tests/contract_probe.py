"""Run by tests/test_contract.py under a strategy's own launcher, one process on the CPU: every
catalogue model its framework can build goes through the adapter's `setup` as a run would,
and the adapter's methods and its builder module are compared with what the registry declares.

    LAUNCHER... python tests/contract_probe.py FRAMEWORK STRATEGY OUT.json
"""

import json
import os
import sys
from pathlib import Path

from mgbench.common.config import RunConfig
from mgbench.common.models import MODELS
from mgbench.common.protocol import Adapter
from mgbench.frameworks.registry import create_trainer, framework_spec

OPTIONAL = {"loader": ("steps_per_epoch", "epoch_batches", "set_learning_rate"), "profiler": ("profile",)}


def overrides(adapter: Adapter, names: tuple[str, ...]) -> list[bool]:
    return [getattr(type(adapter), name) is not getattr(Adapter, name) for name in names]


def main(framework: str, strategy: str, out: Path) -> None:
    spec = framework_spec(framework)
    parameters, adapter = {}, None
    for model in MODELS:
        config = RunConfig(framework, strategy, model, 1, "cpu", 1, 1)
        config = config.with_changes(data_format=spec.capabilities.default_data_format(model))
        if spec.refusal(config):
            continue
        os.environ.update(spec.variables_for(config))
        adapter = create_trainer(framework, strategy)
        parameters[model] = adapter.setup(config).parameters
        primary = adapter.placement.is_primary
        adapter.close()
    declared = {"loader": spec.capabilities.loader is not None, "profiler": spec.capabilities.profiler is not None}
    implemented = {feature: overrides(adapter, names) for feature, names in OPTIONAL.items()}
    if primary:
        out.write_text(
            json.dumps(
                {
                    "is_adapter": isinstance(adapter, Adapter),
                    "builders": sorted(spec.capabilities.builders.defined()),
                    "parameters": parameters,
                    "declared": declared,
                    "implemented": implemented,
                }
            )
        )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], Path(sys.argv[3]))
