"""`mgbench env`: a paste-able report of the host, its GPUs and links, and every framework's environment.

Besides versions, it shows what makes two runs on "the same" GPUs differ: per-GPU current and
maximum SM/memory clocks and PCIe links (NVML), the `nvidia-smi topo -m` matrix verbatim, and
warnings when the GPUs of this machine differ in clocks or links.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from mgbench.frameworks.registry import registered
from mgbench.machine.host import host_environment
from mgbench.machine.topology import clock_warnings, link_warnings, nvidia_smi_topology, parse_topology
from mgbench.runner.venvs import inspect_installation


def register(verbs: argparse._SubParsersAction) -> None:
    parser = verbs.add_parser("env", help="print the environment report (host, GPUs, clocks, topology, versions)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(handler=handle)


def environment_report() -> dict[str, Any]:
    report = host_environment()
    topology = nvidia_smi_topology()
    report["topology"] = topology
    report["warnings"] = clock_warnings(report["gpus"]) + link_warnings(parse_topology(topology or ""))
    report["frameworks"] = {}
    for spec in registered().values():
        found = inspect_installation(spec)
        report["frameworks"][spec.name] = {
            "interpreter": found.interpreter,
            "installed": found.installed,
            "missing": found.missing,
            "versions": found.versions,
        }
    return report


def render(report: dict[str, Any]) -> str:
    """The human report: plain text, so it pastes into an issue or a chat unchanged."""
    lines = [
        f"{key}: {value}" for key, value in report.items() if key not in ("gpus", "frameworks", "topology", "warnings")
    ]
    gpus = report["gpus"]
    lines.append(f"gpus: {len(gpus)}" if gpus else "gpus: none (no NVIDIA GPU/driver visible; CPU devices stand in)")
    for gpu in gpus:
        lines.append("  " + ", ".join(f"{k}={v}" for k, v in gpu.items()))
    if report["topology"]:
        lines.append("topology (nvidia-smi topo -m):")
        lines.extend("  " + line for line in report["topology"].rstrip().splitlines())
    elif gpus:
        lines.append("topology: nvidia-smi not available")
    for warning in report["warnings"]:
        lines.append(f"WARNING: {warning}")
    lines.append("frameworks:")
    for name, info in report["frameworks"].items():
        versions = ", ".join(f"{k} {v}" for k, v in info["versions"].items())
        state = versions if info["installed"] else f"not installed: missing {', '.join(info.get('missing', []))}"
        lines.append(f"  {name}: {state} ({info['interpreter']})")
    return "\n".join(lines)


def handle(args: argparse.Namespace) -> int:
    report = environment_report()
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0
