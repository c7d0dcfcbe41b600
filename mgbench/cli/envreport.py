"""`mgbench env`: a paste-able report of the host and of every framework's environment."""

from __future__ import annotations

import argparse
import json

from mgbench.common.environment import host_environment
from mgbench.common.environments import inspect_installation
from mgbench.frameworks import registered


def register(verbs: argparse._SubParsersAction) -> None:
    parser = verbs.add_parser("env", help="print the environment report (host, GPUs, framework versions)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(handler=handle)


def environment_report() -> dict:
    report = host_environment()
    report["frameworks"] = {}
    for spec in registered().values():
        found = inspect_installation(spec)
        report["frameworks"][spec.name] = {
            "interpreter": found.interpreter,
            "installed": found.installed,
            "versions": found.versions,
        }
    return report


def handle(args: argparse.Namespace) -> int:
    report = environment_report()
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    for key, value in report.items():
        if key in ("gpus", "frameworks"):
            continue
        print(f"{key}: {value}")
    print(f"gpus: {len(report['gpus'])}")
    for gpu in report["gpus"]:
        print("  " + ", ".join(f"{k}={v}" for k, v in gpu.items()))
    print("frameworks:")
    for name, info in report["frameworks"].items():
        versions = ", ".join(f"{k} {v}" for k, v in info["versions"].items()) or "not installed"
        print(f"  {name}: {versions} ({info['interpreter']})")
    return 0
