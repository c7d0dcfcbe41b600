"""The one entry point launchers start: `python -m mgbench.worker --config CONFIG --result-file RESULT`.

torchrun, mpiexec, horovodrun or the orchestrator itself start this module in every process of
a run. It resolves the framework once, refuses a job the registry knows the adapter cannot
train (one line, exit code 2, before importing the framework), sets the variables the
framework reads at import (with `--cold-cache`, its compilers' caches as empty folders of its
own: `training.compile_cache`), and hands the adapter to the shared driver; the primary rank writes
the result row.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

from mgbench.core.config import RunConfig
from mgbench.core.errors import UsageError, say_error
from mgbench.core.inputs import ImageInput
from mgbench.datasets.images import host_decoder
from mgbench.datasets.resolve import task_for
from mgbench.frameworks.registry import create_adapter, framework_spec
from mgbench.records.results import RunResult, write_json_atomically
from mgbench.training.compile_cache import cold_variables
from mgbench.training.driver import run_training


def train(config: RunConfig, state_path: Path | None = None, profile_dir: Path | None = None) -> RunResult | None:
    """Train `config` in this process (one rank of it); the primary rank gets the result."""
    spec = framework_spec(config.framework)
    refusal = spec.refusal(config)
    if refusal:
        raise UsageError(refusal)
    os.environ.update(spec.variables_for(config))
    os.environ.update(cold_variables(os.environ))
    adapter = create_adapter(config.framework, config.strategy)
    capabilities = spec.capabilities
    result = run_training(
        adapter,
        config,
        state_path,
        profile_dir,
        capabilities.profiler,
        capabilities.compiled_by(config),
        capabilities.loader,
        # What the loader's workers decode images with; a token stream is read as it was written.
        host_decoder=host_decoder() if isinstance(config.job.input, ImageInput) else None,
    )
    if result is not None:
        result.build.unmatched = list(capabilities.builders.unmatched.get(result.config.job.model, ()))
        _, task = task_for(config.job)
        result.build.objective = task.objective.name
        result.build.optimization = task.optimization.record()
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mgbench.worker", description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, required=True, help="a RunConfig JSON file")
    parser.add_argument("--result-file", type=Path, required=True, help="the primary rank writes the row (JSON) here")
    parser.add_argument("--save-state", type=Path, default=None, help="write trained weights (.npz) here")
    parser.add_argument("--profile-dir", type=Path, default=None, help="profiler traces go here")
    args = parser.parse_args(argv)
    try:
        result = train(RunConfig.from_json(args.config.read_text()), args.save_state, args.profile_dir)
    except UsageError as error:
        say_error(str(error))
        return 2
    if result is not None:
        write_json_atomically(args.result_file, result.to_json())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
