"""The launchers that start a strategy's processes, one object each: the only place one is named.

A strategy's spec names its launcher by a key (`StrategySpec.launcher`: specs are import-free
and sit in the frameworks layer, below this one); `launcher_for` maps the key to its object,
which knows the command line that starts a run on this machine, the commands that start it
over several hosts, and whether the run is the one process it starts. Adding a launcher is
adding a class here (docs/extending.md), not a branch wherever launchers differ.

Multi-process strategies go through the frameworks' own launchers (torchrun, mpiexec,
horovodrun), never a home-made one, so what mgbench measures is what users run. Across hosts
(`compare --hosts`) torchrun needs one agent per node, started here or through ssh by
`mgbench.runner.launch`, which executes what these objects build; horovodrun and mpiexec take
the host list themselves and start the remote processes with their own ssh.
"""

from __future__ import annotations

import os
import shutil
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from mgbench.core.errors import UsageError
from mgbench.runner.hosts import Host

RUN_ENTRY = ("-m", "mgbench.worker")
"""What every launcher starts in each process of a run (with its arguments after it)."""


@dataclass(frozen=True)
class Launch:
    """What a launcher starts: `entry` (by default `python -m mgbench.worker`) with `run_args`,
    through the run's `interpreter`; over hosts, for the run `run_id`, meeting at `port` of the
    first host where the launcher needs a rendezvous."""

    interpreter: str
    run_args: Sequence[str] = ()
    entry: Sequence[str] = RUN_ENTRY
    run_id: str = ""
    port: int = 0

    @property
    def worker(self) -> list[str]:
        """The command each of the launcher's processes runs."""
        return [self.interpreter, *self.entry, *self.run_args]


@dataclass(frozen=True)
class NodeCommand:
    """One command of a (possibly multi-node) launch: where it runs (None: here) and what;
    `mgbench.runner.launch` starts it, through ssh for another host."""

    host: Host | None
    argv: list[str]


class Launcher(ABC):
    """How a strategy's processes start: on this machine (`command`) and over hosts (`node_commands`)."""

    key: ClassVar[str]
    """The name strategies' specs give this launcher."""
    one_process: ClassVar[bool] = False
    """The run is the one process it starts, driving every device itself: it cannot span hosts,
    and that process does every device's host work."""
    markers: ClassVar[tuple[str, ...]] = ()
    """Variables it sets in the processes it starts: a process seeing one runs under it
    (`mgbench run` then trains in place, as one rank of the job)."""

    @abstractmethod
    def command(self, launch: Launch, processes: int) -> list[str]:
        """The command line that starts `launch` in `processes` processes on this machine."""

    @abstractmethod
    def node_commands(self, launch: Launch, hosts: list[Host]) -> list[NodeCommand]:
        """The commands that start `launch` in a process per slot of `hosts` (before ssh)."""


class InProcess(Launcher):
    """The orchestrator starts the worker itself, and its one process drives all the run's
    devices (tf.distribute, JAX's sharding, DataParallel)."""

    key = "inprocess"
    one_process = True

    def command(self, launch: Launch, processes: int) -> list[str]:
        return launch.worker

    def node_commands(self, launch: Launch, hosts: list[Host]) -> list[NodeCommand]:
        """Never: the orchestrator makes a run of a `one_process` launcher over hosts an
        `unsupported` row first, so reaching this is a caller's mistake."""
        raise ValueError(f"{self.key} runs in one process; it cannot span hosts")


class Torchrun(Launcher):
    """PyTorch's launcher: an agent per machine starting a process per device."""

    key = "torchrun"
    markers = ("TORCHELASTIC_RUN_ID",)
    module = ("-m", "torch.distributed.run")
    """torchrun through the environment's interpreter, as horovodrun (its script may be elsewhere)."""

    def command(self, launch: Launch, processes: int) -> list[str]:
        agent = [launch.interpreter, *self.module, "--standalone", f"--nproc-per-node={processes}"]
        return [*agent, *launch.entry, *launch.run_args]

    def node_commands(self, launch: Launch, hosts: list[Host]) -> list[NodeCommand]:
        """One agent per node, rendezvous through c10d on the first host (c10d assigns node
        ranks as agents arrive; torchrun ignores --node-rank with it, so none is passed)."""
        rendezvous = [
            "--rdzv-backend=c10d",
            f"--rdzv-endpoint={hosts[0].name}:{launch.port}",
            f"--rdzv-id={launch.run_id}",
        ]
        return [
            NodeCommand(
                host,
                [
                    launch.interpreter,
                    *self.module,
                    f"--nnodes={len(hosts)}",
                    f"--nproc-per-node={host.slots}",
                    *rendezvous,
                    *launch.entry,
                    *launch.run_args,
                ],
            )
            for host in hosts
        ]


class HostListLauncher(Launcher):
    """A launcher given the process count and the host list (`-H node1:4,node2:4`) that reaches
    the other hosts with its own ssh: one command here, whether on one host or several."""

    @abstractmethod
    def prefix(self, interpreter: str, processes: int, host_option: list[str]) -> list[str]:
        """The launcher's own part of the command line, before the worker's interpreter."""

    def command(self, launch: Launch, processes: int) -> list[str]:
        return [*self.prefix(launch.interpreter, processes, []), *launch.worker]

    def node_commands(self, launch: Launch, hosts: list[Host]) -> list[NodeCommand]:
        total = sum(host.slots for host in hosts)
        host_option = ["-H", ",".join(str(host) for host in hosts)]
        return [NodeCommand(None, [*self.prefix(launch.interpreter, total, host_option), *launch.worker])]


class Mpiexec(HostListLauncher):
    """MPI's launcher (ChainerMN)."""

    key = "mpirun"
    markers = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE")

    def prefix(self, interpreter: str, processes: int, host_option: list[str]) -> list[str]:
        """`mpiexec -n N [-H hosts]`, allowed to run as root where we are root (containers, CI)."""
        root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
        return [shutil.which("mpiexec") or "mpiexec", *root, "-n", str(processes), *host_option]


class Horovodrun(HostListLauncher):
    """Horovod's launcher."""

    key = "horovodrun"
    markers = ("HOROVOD_RANK",)

    def prefix(self, interpreter: str, processes: int, host_option: list[str]) -> list[str]:
        """horovodrun through the environment's interpreter (its console script may be elsewhere)."""
        return [interpreter, "-m", "horovod.runner.launch", "-np", str(processes), *host_option]


TORCHRUN = Torchrun()
"""The launcher of the bandwidth measurement, which runs torch's collectives whatever is compared."""
LAUNCHERS: dict[str, Launcher] = {
    launcher.key: launcher for launcher in (InProcess(), TORCHRUN, Mpiexec(), Horovodrun())
}


def launcher_for(key: str) -> Launcher:
    """The launcher a strategy's spec names by `key`. A key no launcher has (a plugin's spec
    can name anything) is one UsageError naming the launchers there are."""
    try:
        return LAUNCHERS[key]
    except KeyError:
        raise UsageError(f"no launcher {key!r}; the launchers: {', '.join(LAUNCHERS)}") from None
