"""How a machine's GPUs are wired and clocked, and the differences that skew a comparison.

Seen in practice: GPUs of one machine running at different memory clocks, and GPU pairs
linked through different paths (PIX: one PCIe switch, PHB: through the CPU's host bridge,
NV#: NVLink) changing results depending on which GPUs a run got. `nvidia-smi topo -m` is the
authority on links, so its matrix is parsed rather than re-derived; clocks and PCIe link
generation/width come from NVML (`mgbench.machine.host.gpu_environment`).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import defaultdict
from typing import Any

ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")
GPU_LABEL = re.compile(r"^GPU\d+$")
COLUMN_LABEL = re.compile(r"^(GPU\d+|NIC\d+|mlx\w+)$")


def nvidia_smi_topology() -> str | None:
    """The raw `nvidia-smi topo -m` text, or None where nvidia-smi is missing or fails. A byte
    that is not UTF-8 (a driver's, a locale's) is shown as U+FFFD, not a failure of `env`."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        done = subprocess.run(
            [smi, "topo", "-m"], capture_output=True, text=True, errors="replace", timeout=30, check=True
        )
    except (subprocess.SubprocessError, OSError):
        return None
    return ANSI_ESCAPE.sub("", done.stdout)


def parse_topology(text: str) -> dict[str, dict[str, str]]:
    """GPU-to-GPU links from the matrix of `nvidia-smi topo -m`: {"GPU0": {"GPU1": "PIX", ...}}.

    The header names the columns (GPUs, then NICs, then affinity columns); each GPU row lists
    its link to every column in that order. NIC columns and the legend are ignored.
    """
    lines = [ANSI_ESCAPE.sub("", line).split() for line in text.splitlines()]
    starts = [i for i, tokens in enumerate(lines) if tokens and GPU_LABEL.match(tokens[0])]
    if not starts:
        return {}
    columns = [token for token in lines[starts[0]] if COLUMN_LABEL.match(token)]
    links: dict[str, dict[str, str]] = {}
    for tokens in (lines[i] for i in starts[1:]):
        row = dict(zip(columns, tokens[1 : 1 + len(columns)]))
        links[tokens[0]] = {name: link for name, link in row.items() if GPU_LABEL.match(name) and name != tokens[0]}
    return links


def link_warnings(links: dict[str, dict[str, str]]) -> list[str]:
    """One warning when GPU pairs are connected through different kinds of link."""
    pairs: dict[str, list[str]] = defaultdict(list)
    for source, row in links.items():
        for target, link in row.items():
            if int(source[3:]) < int(target[3:]):
                pairs[link].append(f"{source}-{target}")
    if len(pairs) < 2:
        return []
    detail = "; ".join(f"{link}: {', '.join(names)}" for link, names in sorted(pairs.items()))
    return [
        f"GPU pairs are linked differently ({detail}): results depend on which GPUs a run gets; "
        "pin them with CUDA_VISIBLE_DEVICES and report the topology"
    ]


def _differs(gpus: list[dict[str, Any]], key: str) -> dict[int, Any] | None:
    values = {gpu["index"]: gpu[key] for gpu in gpus if gpu.get(key) is not None}
    return values if len(set(values.values())) > 1 else None


def clock_warnings(gpus: list[dict[str, Any]]) -> list[str]:
    """Warnings when GPUs of this machine differ in memory clocks, SM max clock or PCIe links."""
    checks = (
        ("mem_clock_mhz", "run at different memory clocks now", "MHz"),
        ("mem_clock_max_mhz", "have different maximum memory clocks", "MHz"),
        ("sm_clock_max_mhz", "have different maximum SM clocks", "MHz"),
        ("pcie_link_max", "have different maximum PCIe links", ""),
        ("pcie_link", "run at different PCIe links now (idle GPUs may lower the generation)", ""),
    )
    warnings = []
    for key, what, unit in checks:
        values = _differs(gpus, key)
        if values:
            listed = ", ".join(f"GPU{index} {value}{' ' + unit if unit else ''}" for index, value in values.items())
            warnings.append(f"GPUs {what}: {listed}")
    return warnings
