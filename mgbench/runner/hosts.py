"""Which machines a multi-node run spans: `--hosts host1:4,host2:4`, or the Slurm allocation.

A host is a name and a slot count (processes/devices on it), the same notation horovodrun and
mpiexec take. `--hosts slurm` reads the allocation Slurm put in the environment, expanding
the node list with `scontrol show hostnames` (Slurm's own tool) where it is installed.
"""

from __future__ import annotations

import ipaddress
import itertools
import math
import os
import re
import shutil
import socket
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import NamedTuple

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


MAX_NODES = 16_384
"""The most nodes `--hosts slurm` spans: more than the largest machines have (about 10,000). A node
list past it is no allocation to benchmark over (a variable from elsewhere, a range mistyped),
and expanding it would hold every name in memory, for minutes, before anything said so."""
SLURM_RANGE = re.compile(r"(\d{1,64})(?:-(\d{1,64}))?", re.ASCII)
"""One range of a bracket group (`01-03`, `7`): its numbers keep the first one's width. A number
of more digits is no node's (and past 4,300 digits, no number `int` reads)."""


class NodeRange(NamedTuple):
    first: int
    last: int
    width: int

    def names(self) -> Iterator[str]:
        return (f"{number:0{self.width}d}" for number in range(self.first, self.last + 1))


def top_level_items(nodelist: str) -> list[str]:
    """The comma-separated items of a node list, a comma inside brackets (`gpu[1,3]`) not splitting one."""
    items, depth, start = [], 0, 0
    for index, char in enumerate(nodelist):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            items.append(nodelist[start:index])
            start = index + 1
    return [item for item in [*items, nodelist[start:]] if item]


def node_pattern(item: str) -> list[str | list[NodeRange]] | None:
    """An item (`rack[1-2]-gpu[01-04,07]`) as its literal parts and bracket groups in order; None
    where it is no Slurm item (a bracket left open, a range that is no numbers or runs backwards)."""
    parts: list[str | list[NodeRange]] = []
    for index, text in enumerate(re.split(r"\[([^\[\]]*)\]", item)):
        if index % 2 == 0:
            if "[" in text or "]" in text:
                return None
            parts.append(text)
            continue
        group = []
        for part in text.split(","):
            found = SLURM_RANGE.fullmatch(part)
            if not found or int(found[2] or found[1]) < int(found[1]):
                return None
            group.append(NodeRange(int(found[1]), int(found[2] or found[1]), len(found[1])))
        parts.append(group)
    return parts


def pattern_count(pattern: list[str | list[NodeRange]]) -> int:
    """How many names an item stands for, counted from its ranges' bounds, none expanded."""
    return math.prod(sum(r.last - r.first + 1 for r in part) for part in pattern if isinstance(part, list))


def pattern_names(pattern: list[str | list[NodeRange]]) -> list[str]:
    """The names an item stands for, in Slurm's order (the last bracket group varying fastest)."""
    choices = [[part] if isinstance(part, str) else [name for r in part for name in r.names()] for part in pattern]
    return ["".join(chosen) for chosen in itertools.product(*choices)]


def expand_nodelist(nodelist: str) -> list[str]:
    """Slurm's compressed node list (`gpu[01-03,07],login1`) as names, via scontrol when present;
    a list neither reads (`gpu[a-b]`) is a UsageError naming it, and so is one of more than
    MAX_NODES nodes, counted from its ranges before any name is made."""
    refused = UsageError(f"--hosts slurm: SLURM_JOB_NODELIST {nodelist!r} is not a Slurm node list")
    patterns = [node_pattern(item) for item in top_level_items(nodelist)]
    read = [pattern for pattern in patterns if pattern is not None] if None not in patterns else []
    if read:
        check_node_count(nodelist, sum(pattern_count(pattern) for pattern in read))
    scontrol = shutil.which("scontrol")
    if scontrol:
        # Slurm's own reading, where it differs from this one (scontrol's syntax is the reference).
        done = subprocess.run([scontrol, "show", "hostnames", nodelist], capture_output=True, text=True)
        if done.returncode != 0:
            raise refused
        names = done.stdout.split()
    elif read:
        names = [name for pattern in read for name in pattern_names(pattern)]
    else:
        raise refused
    check_node_count(nodelist, len(names))
    return names


def check_node_count(nodelist: str, count: int) -> None:
    if count > MAX_NODES:
        raise UsageError(
            f"--hosts slurm: SLURM_JOB_NODELIST {nodelist!r} names {count:,} nodes; mgbench spans at most {MAX_NODES:,}"
        )


def tasks_per_node(text: str | None) -> int:
    """`SLURM_NTASKS_PER_NODE` (`4`, or `4(x2)` as Slurm writes a count repeated over nodes): the
    processes per node, 1 or more; anything else is one UsageError saying what it takes."""
    if not text:
        raise UsageError("--hosts slurm: SLURM_NTASKS_PER_NODE is not set (use --ntasks-per-node=GPUS)")
    found = re.fullmatch(r"(\d+)(?:\(x\d+\))?", text.strip(), re.ASCII)
    if not found or int(found[1]) < 1:
        raise UsageError(
            f"--hosts slurm: SLURM_NTASKS_PER_NODE is {text!r}, not a count of processes per node "
            "(1 or more: one per GPU, --ntasks-per-node=GPUS)"
        )
    return int(found[1])


def slurm_hosts(environ: Mapping[str, str] | None = None) -> list[Host]:
    """Hosts of the current Slurm allocation: SLURM_JOB_NODELIST x SLURM_NTASKS_PER_NODE, both
    checked before the node list is expanded."""
    env = os.environ if environ is None else environ
    nodelist = env.get("SLURM_JOB_NODELIST")
    if not nodelist:
        raise UsageError("--hosts slurm: SLURM_JOB_NODELIST is not set (run inside an allocation)")
    slots = tasks_per_node(env.get("SLURM_NTASKS_PER_NODE"))
    names = expand_nodelist(nodelist)
    for name in names:
        # Handed to ssh as `--hosts` names are: checked alike, so `-oProxyCommand=...` is no node.
        if not HOST_NAME.fullmatch(name):
            raise UsageError(f"--hosts slurm: SLURM_JOB_NODELIST names {name!r}, which is not a host name")
    return [Host(name, slots) for name in names]


def resolve_hosts(text: str) -> list[Host]:
    hosts = slurm_hosts() if text == "slurm" else parse_hosts(text)
    if len({host.slots for host in hosts}) != 1:
        raise UsageError(f"every host needs the same slot count (torchrun's --nproc-per-node), got {text!r}")
    return hosts
