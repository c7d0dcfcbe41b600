"""`mgbench run`: one framework, one strategy, one device count.

Two ways in. A user names the run with flags; a multi-process strategy is then started under
its launcher (torchrun, mpiexec, horovodrun) exactly as `compare` would, and so is a run whose
framework has its own environment (`.venvs/<env>`) other than this interpreter. A launcher (or
`compare`) starts it with `--config FILE`; the run then happens in this process, and the
primary rank writes the result to `--result-file`.
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import datetime
from pathlib import Path


from mgbench.cli.options import add_job_options, base_config
from mgbench.common.config import RunConfig
from mgbench.common.devices import check_device_counts
from mgbench.common.driver import run_training
from mgbench.runner.launch import environment_python, launched_by_launcher
from mgbench.common.runfolder import RunFolder
from mgbench.runner.orchestrator import execute_run
from mgbench.common.results import append_result, write_json_atomically
from mgbench.datasets.resolve import check_dataset
from mgbench.frameworks.registry import FrameworkSpec, create_trainer, framework_spec
from mgbench.reports.summary import print_summary, results_frame

DEFAULT_TIMEOUT_SECONDS = 1200.0


def register(verbs: argparse._SubParsersAction) -> None:
    parser = verbs.add_parser("run", help="one framework, one strategy, one device count")
    parser.add_argument("--framework", default="pytorch")
    parser.add_argument("--strategy", default=None, help="default: the framework's first strategy")
    parser.add_argument("--gpus", type=int, default=1, help="device count (default 1)")
    parser.add_argument("--config", type=Path, default=None, help="a RunConfig JSON file (set by compare/launchers)")
    parser.add_argument("--result-file", type=Path, default=None, help="write the result row (JSON) here")
    parser.add_argument("--save-state", type=Path, default=None, help="write trained weights (.npz) here")
    parser.add_argument("--profile-dir", type=Path, default=None, help="profiler traces go here (set by compare)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_SECONDS, help="seconds, under a launcher")
    parser.add_argument("--out", type=Path, default=None, help="run folder when started under a launcher")
    add_job_options(parser)
    parser.set_defaults(handler=handle)


def config_from_flags(args: argparse.Namespace) -> RunConfig:
    spec = framework_spec(args.framework)
    strategy = spec.strategy(args.strategy or spec.strategies[0].name)
    config = base_config(args, spec.name, strategy.name, args.gpus)
    if not launched_by_launcher():
        # Under a launcher `--gpus` counts every process of the job, across nodes too: the
        # adapter checks it against the world size, as this host alone sees only its share.
        check_device_counts([config.devices], config.device_kind)
    check_dataset(config.dataset, [config])
    return config


def in_other_environment(spec: FrameworkSpec) -> bool:
    """True where the framework has its own environment and this interpreter is not in it."""
    own = environment_python(spec)
    return own.exists() and Path(sys.prefix).resolve() != own.parents[1].resolve()


def needs_own_process(config: RunConfig, from_flags: bool) -> bool:
    """Whether the run must be started as `compare` starts it (launcher, environment), not here."""
    spec = framework_spec(config.framework)
    if spec.strategy(config.strategy).launcher != "inprocess":
        return not launched_by_launcher()
    return from_flags and in_other_environment(spec)


def handle(args: argparse.Namespace) -> int:
    config = RunConfig.from_json(args.config.read_text()) if args.config else config_from_flags(args)
    spec = framework_spec(config.framework)
    if needs_own_process(config, from_flags=args.config is None):
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        folder = RunFolder(args.out or Path("runs") / f"{stamp}-{config.run_id}")
        result = execute_run(config, folder, args.timeout, args.save_state)
        append_result(folder.results, result)
        print_summary(results_frame([result]), f"{config.model}: {config.run_id}")
        return 0 if result.status == "ok" else 1
    os.environ.update(spec.variables_for(config))
    profile_dir = args.profile_dir or ((args.out or Path(".")) / "profiles" / config.run_id if config.profile_steps else None)
    result = run_training(create_trainer(config.framework, config.strategy), config, args.save_state, profile_dir)
    if result is None:
        return 0
    if args.result_file:
        write_json_atomically(args.result_file, result.to_json())
    if not args.config:
        print_summary(results_frame([result]), f"{config.model}: {config.run_id}")
    return 0
