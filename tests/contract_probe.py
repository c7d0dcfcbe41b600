"""Run by tests/test_contract.py under a strategy's own launcher, one process on the CPU: the
models named go through the adapter's `setup` as a run would, their trainable weights are
counted from what `save_state` writes (the tensors a per-tensor exchange hands over), and the
adapter's methods and its builder module are compared with what the registry declares.

    LAUNCHER... python tests/contract_probe.py FRAMEWORK STRATEGY OUT.json MODEL...
"""

import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

from mgbench.core.config import RunConfig
from mgbench.core.models import model_spec
from mgbench.frameworks.registry import create_adapter, framework_spec
from mgbench.training.protocol import Adapter

OPTIONAL = {
    "loader": ("steps_per_epoch", "epoch_batches"),
    "schedule": ("set_learning_rate",),
    "profiler": ("profile",),
}
"""The optional methods by the feature that makes them owed: a real-data loader, the driver's
learning-rate schedule (in epochs on real data, and at every step of a model whose schedule runs
in steps), a profiler."""


def sets_rates(spec) -> bool:
    """Whether the driver sets the adapter's learning rate: it trains epochs of real data, or a
    model whose schedule runs in steps too (`Schedule.schedules_steps`)."""
    scheduled = (model_spec(model).optimization.schedule.schedules_steps for model in spec.capabilities.models)
    return spec.capabilities.loader is not None or any(scheduled)


def overrides(adapter: Adapter, names: tuple[str, ...]) -> list[bool]:
    return [getattr(type(adapter), name) is not getattr(Adapter, name) for name in names]


def trainable_tensors(adapter: Adapter) -> int:
    """How many named arrays the adapter's `save_state` writes: its trainable tensors."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "state.npz"
        adapter.save_state(path)
        with np.load(path) as saved:
            return len(saved.files)


def main(framework: str, strategy: str, out: Path, models: list[str]) -> None:
    spec = framework_spec(framework)
    parameters, tensors, adapter = {}, {}, None
    for model in models:
        config = RunConfig.flat(framework, strategy, model, 1, "cpu", 1, 1)
        config = config.with_changes(data_format=spec.capabilities.default_data_format(model))
        if spec.refusal(config):
            continue
        os.environ.update(spec.variables_for(config))
        adapter = create_adapter(framework, strategy)
        parameters[model] = adapter.setup(config).parameters
        tensors[model] = trainable_tensors(adapter)
        primary = adapter.placement.is_primary
        adapter.close()
    declared = {
        "loader": spec.capabilities.loader is not None,
        "schedule": sets_rates(spec),
        "profiler": spec.capabilities.profiler is not None,
    }
    implemented = {feature: overrides(adapter, names) for feature, names in OPTIONAL.items()}
    if primary:
        out.write_text(
            json.dumps(
                {
                    "is_adapter": isinstance(adapter, Adapter),
                    "builders": sorted(spec.capabilities.builders.defined()),
                    "parameters": parameters,
                    "tensors": tensors,
                    "declared": declared,
                    "implemented": implemented,
                }
            )
        )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], Path(sys.argv[3]), sys.argv[4:])
