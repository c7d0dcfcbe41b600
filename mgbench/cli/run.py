"""`mgbench run`: one framework, one strategy, one device count: a compare of one config.

The run goes through the runner as a compare's run does (its launcher, its framework's
environment, timeout, monitor, one row in a new run folder whose lock it holds meanwhile). Started
by hand under a launcher that spans machines (`horovodrun -np 8 -H ...`, one `torchrun` per
node), it trains in place instead, as `python -m mgbench.worker` does; the primary rank prints
the row.
"""

from __future__ import annotations

import argparse
import dataclasses
from datetime import datetime
from pathlib import Path

from rich.console import Console

from mgbench.cli.options import add_job_options, job_from_args
from mgbench.cli.output import note_to
from mgbench.cli.values import folder_path, new_weights_file, positive_seconds
from mgbench.core.config import RunConfig
from mgbench.datasets.resolve import check_dataset
from mgbench.frameworks.registry import framework_spec
from mgbench.machine.devices import check_device_counts
from mgbench.records.finished import write_results
from mgbench.reports.compact import print_summary
from mgbench.reports.summary import results_frame
from mgbench.runner.compare_service import prepare_folder, refuse_used_folder
from mgbench.runner.launch import launched_by_launcher
from mgbench.runner.orchestrator import DEFAULT_TIMEOUT_SECONDS, execute_run
from mgbench.runner.plan import plan_runs, replan
from mgbench.worker import train


def register(verbs: argparse._SubParsersAction) -> None:
    parser = verbs.add_parser("run", help="one framework, one strategy, one device count")
    parser.add_argument(
        "--framework", default="pytorch", help="the framework to train (default pytorch; see mgbench list)"
    )
    parser.add_argument("--strategy", default=None, help="default: the framework's default strategy")
    parser.add_argument("--gpus", type=int, default=1, help="device count (default 1)")
    parser.add_argument(
        "--save-state", type=new_weights_file, default=None, help="write trained weights here (a new .npz)"
    )
    parser.add_argument("--timeout", type=positive_seconds, default=DEFAULT_TIMEOUT_SECONDS, help="seconds")
    parser.add_argument("--out", type=folder_path, default=None, help="run folder (default runs/<time>-<run>)")
    add_job_options(parser)
    parser.set_defaults(handler=handle)


def config_from_flags(args: argparse.Namespace) -> RunConfig:
    spec = framework_spec(args.framework)
    job, _ = job_from_args(args)
    [run] = plan_runs(job, [spec.name], [args.strategy or spec.defaults[0]], [args.gpus], "weak")
    config = run.config
    if not launched_by_launcher():
        # Under a launcher `--gpus` counts every process of the job, across nodes too: the
        # adapter checks it against the world size, as this host alone sees only its share.
        check_device_counts([config.devices], config.job.device_kind)
    checked = check_dataset(config.job, [config], on_note=note_to(Console(stderr=True, soft_wrap=True)))
    return dataclasses.replace(config, job=checked)


def handle(args: argparse.Namespace) -> int:
    config = config_from_flags(args)
    title = f"{config.job.model}: {config.run_id}"
    if launched_by_launcher():
        result = train(config, args.save_state)
        if result is not None:
            print_summary(results_frame([result]), title)
        return 0
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    # A used folder is refused as compare refuses it: a row appended to a compare's folder would
    # stand in its results under one of its run ids.
    folder = prepare_folder(args.out or Path("runs") / f"{stamp}-{config.run_id}", new=True)
    with folder.claimed():
        refuse_used_folder(folder.root)
        result = execute_run(replan(config), folder, args.timeout, args.save_state)
        rows = write_results(folder.results, [[result]])  # finished as a compare's one round is
    print_summary(results_frame(rows), title)
    return 0 if result.status == "ok" else 1
