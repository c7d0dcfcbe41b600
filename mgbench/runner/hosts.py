"""Which machines a multi-node run spans: `--hosts host1:4,host2:4`, or the Slurm allocation.

A host is a name and a slot count (processes/devices on it), the same notation horovodrun and
mpiexec take. `--hosts slurm` reads the allocation Slurm put in the environment, expanding
the node list with `scontrol show hostnames` (Slurm's own tool) where it is installed.
"""

from __future__ import annotations

import ipaddress
import os
import re
import shutil
import socket
import subprocess
from dataclasses import dataclass

from mgbench.core.errors import UsageError

HOST_NAME = re.compile(r"[\w.:%\[\]][\w.:%\[\]-]*", re.ASCII)
"""A host name or address as `--hosts` takes it: no leading `-`, nothing a shell or ssh reads
as more (`compare --resume` reads hosts from a run folder, which may come from anywhere, and
hands them to ssh)."""


@dataclass(frozen=True)
class Host:
    name: str
    slots: int

    @property
    def is_local(self) -> bool:
        """True for this machine: started directly, not through ssh."""
        if self.name in ("localhost", socket.gethostname(), socket.getfqdn()):
            return True
        try:
            return ipaddress.ip_address(self.name).is_loopback
        except ValueError:
            return False

    def __str__(self) -> str:
        return f"{self.name}:{self.slots}"


def parse_hosts(text: str) -> list[Host]:
    """`host1:4,host2:4` -> hosts; every host needs a slot count of at least 1."""
    hosts = []
    for token in filter(None, (part.strip() for part in text.split(","))):
        name, _, slots = token.rpartition(":")
        if not HOST_NAME.fullmatch(name) or not slots.isdigit() or int(slots) < 1:
            raise UsageError(f"--hosts takes host:slots[,host:slots...] with slots >= 1, got {token!r}")
        hosts.append(Host(name, int(slots)))
    if not hosts:
        raise UsageError("--hosts is empty")
    if len({host.name for host in hosts}) != len(hosts):
        raise UsageError(f"--hosts names a host twice: {text!r}")
    return hosts


def expand_nodelist(nodelist: str) -> list[str]:
    """Slurm's compressed node list (`gpu[01-03,07],login1`) as names, via scontrol when present;
    a list neither reads (`gpu[a-b]`) is a UsageError naming it."""
    refused = UsageError(f"--hosts slurm: SLURM_JOB_NODELIST {nodelist!r} is not a Slurm node list")
    scontrol = shutil.which("scontrol")
    if scontrol:
        done = subprocess.run([scontrol, "show", "hostnames", nodelist], capture_output=True, text=True)
        if done.returncode != 0:
            raise refused
        return done.stdout.split()
    names = []
    for prefix, ranges in re.findall(r"([^,\[]+)(?:\[([^\]]*)\])?,?", nodelist):
        if not ranges:
            names.append(prefix)
            continue
        for part in ranges.split(","):
            first, _, last = part.partition("-")
            if not first.isdigit() or not (last or first).isdigit():
                raise refused
            for number in range(int(first), int(last or first) + 1):
                names.append(f"{prefix}{number:0{len(first)}d}")
    if not names:
        raise refused
    return names


def slurm_hosts(environ: dict[str, str] | None = None) -> list[Host]:
    """Hosts of the current Slurm allocation: SLURM_JOB_NODELIST x SLURM_NTASKS_PER_NODE."""
    env = os.environ if environ is None else environ
    nodelist = env.get("SLURM_JOB_NODELIST")
    per_node = env.get("SLURM_NTASKS_PER_NODE", "")
    if not nodelist:
        raise UsageError("--hosts slurm: SLURM_JOB_NODELIST is not set (run inside an allocation)")
    slots = re.match(r"\d+", per_node)
    if not slots:
        raise UsageError("--hosts slurm: SLURM_NTASKS_PER_NODE is not set (use --ntasks-per-node=GPUS)")
    names = expand_nodelist(nodelist)
    for name in names:
        # Handed to ssh as `--hosts` names are: checked alike, so `-oProxyCommand=...` is no node.
        if not HOST_NAME.fullmatch(name):
            raise UsageError(f"--hosts slurm: SLURM_JOB_NODELIST names {name!r}, which is not a host name")
    return [Host(name, int(slots.group())) for name in names]


def resolve_hosts(text: str) -> list[Host]:
    hosts = slurm_hosts() if text == "slurm" else parse_hosts(text)
    if len({host.slots for host in hosts}) != 1:
        raise UsageError(f"every host needs the same slot count (torchrun's --nproc-per-node), got {text!r}")
    return hosts
