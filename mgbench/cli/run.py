"""`mgbench run`: one framework, one strategy, one device count.

Two ways in. A user names the run with flags; a multi-process strategy is then started under
its launcher (torchrun, mpiexec, horovodrun), and a framework with its own environment
(`.venvs/<env>`) in that interpreter, exactly as `compare` would. A launcher (or
`compare`) starts it with `--config FILE`; the run then happens in this process, and the
primary rank writes the result to `--result-file`.
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import datetime
from pathlib import Path

from rich.console import Console

from mgbench.cli.options import add_job_options, base_config
from mgbench.common.config import RunConfig
from mgbench.common.devices import check_device_counts
from mgbench.common.driver import run_training
from mgbench.common.launch import interpreter_for, launched_by_launcher
from mgbench.common.orchestrator import RunFolder, execute_run
from mgbench.common.results import append_result, write_json_atomically
from mgbench.frameworks import FrameworkSpec, StrategySpec, create_trainer, framework_spec
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
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_SECONDS, help="seconds, under a launcher")
    parser.add_argument("--out", type=Path, default=None, help="run folder when started under a launcher")
    add_job_options(parser)
    parser.set_defaults(handler=handle)


def config_from_flags(args: argparse.Namespace) -> RunConfig:
    spec = framework_spec(args.framework)
    strategy = spec.strategy(args.strategy or spec.strategies[0].name)
    config = base_config(args, spec.name, strategy.name, args.gpus)
    check_device_counts([config.devices], config.device_kind)
    return config


def needs_own_process(spec: FrameworkSpec, strategy: StrategySpec, from_config: bool) -> bool:
    """A run named by flags goes through `execute_run` (as `compare` runs it) when it needs a
    launcher, or when its framework has its own environment and this is another interpreter."""
    if from_config:
        return False
    if strategy.launcher != "inprocess":
        return not launched_by_launcher()
    return Path(interpreter_for(spec)).absolute() != Path(sys.executable).absolute()


def handle(args: argparse.Namespace) -> int:
    config = RunConfig.from_json(args.config.read_text()) if args.config else config_from_flags(args)
    spec = framework_spec(config.framework)
    strategy = spec.strategy(config.strategy)
    if needs_own_process(spec, strategy, args.config is not None):
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        folder = RunFolder(args.out or Path("runs") / f"{stamp}-{config.run_id}")
        result = execute_run(config, folder, args.timeout, args.save_state)
        append_result(folder.results, result)
        print_summary(results_frame([result]), Console(), f"{config.model}: {config.run_id}")
        return 0 if result.status == "ok" else 1
    os.environ.update(spec.variables_for(config))
    result = run_training(create_trainer(config.framework, config.strategy), config, args.save_state)
    if result is None:
        return 0
    if args.result_file:
        write_json_atomically(args.result_file, result.to_json())
    if not args.config:
        print_summary(results_frame([result]), Console(), f"{config.model}: {config.run_id}")
    return 0
