"""Starting runs: which interpreter, and the launchers' commands as subprocesses with a timeout.

The commands come from the strategies' launchers (`mgbench.runner.launchers`). Each framework
runs with the interpreter of its virtual environment (`.venvs/<env>/bin/python`) when that
exists, else with the interpreter running mgbench. A command for another host is started
through `ssh HOST` (same paths there: a shared file system or an identical checkout).

Every run starts with PYTHONSAFEPATH=1 (`isolated_environment`): none of its processes imports
from the working directory. Each run has a watchdog (`mgbench.runner.watchdog`) that kills what
the run started if mgbench is killed first.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import mgbench
from mgbench.core.safe_files import fresh_stream
from mgbench.frameworks.specs import FrameworkSpec
from mgbench.runner.launchers import LAUNCHERS, NodeCommand
from mgbench.runner.watchdog import RunWatchdog

VENVS_ENV = "MGBENCH_VENVS"
TERMINATE_GRACE_SECONDS = 10.0
LOG_TAIL_LINES = 25
POLL_SECONDS = 0.05
SAFE_PATH_ENV = "PYTHONSAFEPATH"


def project_root() -> Path:
    return Path(mgbench.__file__).resolve().parents[1]


def venvs_dir() -> Path:
    return Path(os.environ.get(VENVS_ENV) or project_root() / ".venvs")


def environment_python(spec: FrameworkSpec) -> Path:
    return venvs_dir() / spec.environment / "bin" / "python"


def interpreter_for(spec: FrameworkSpec) -> str:
    """The framework's own environment if it was set up, else the current interpreter."""
    own = environment_python(spec)
    return str(own) if own.exists() else sys.executable


def isolated_environment(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """`env` (default: this process's) with PYTHONSAFEPATH=1, what `python -P` does: no Python
    started with it puts the working directory (for `-m` and `-c`) or the script's folder first
    on sys.path, so a `numpy.py` in the user's folder is never imported; PYTHONPATH still counts.
    Launchers pass their environment on, so it reaches the workers that torchrun re-executes
    with its own command line, and those of mpiexec and horovodrun."""
    return {**(os.environ if env is None else env), SAFE_PATH_ENV: "1"}


def launched_by_launcher() -> bool:
    """True inside a process started by a launcher of several processes (torchrun, mpiexec,
    horovodrun: `Launcher.markers`)."""
    return any(marker in os.environ for launcher in LAUNCHERS.values() for marker in launcher.markers)


FORWARDED_ENV_PREFIXES = ("MGBENCH_", "OMP_NUM_THREADS", "PYTHON", "CUDA_VISIBLE_DEVICES", "NCCL_", "GLOO_")
"""Variables a node started through ssh receives from this one (ssh starts a bare environment)."""


def node_argv(node: NodeCommand, env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """The argv and environment that start `node` from here: directly, or through ssh.

    ssh gives the remote command a bare environment, so the mgbench variables and thread counts
    are exported in front of it, in the same folder as here.
    """
    if node.host is None or node.host.is_local:
        return node.argv, env
    forwarded = {k: v for k, v in env.items() if k.startswith(FORWARDED_ENV_PREFIXES)}
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(forwarded.items()))
    remote = f"cd {shlex.quote(os.getcwd())} && env {exports} {shlex.join(node.argv)}"
    return ["ssh", "-o", "BatchMode=yes", node.host.name, remote], env


@dataclass(frozen=True)
class Outcome:
    returncode: int | None
    timed_out: bool
    seconds: float
    log_tail: str


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    if not path.exists():
        return ""
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _wait_group(process: subprocess.Popen, seconds: float) -> bool:
    """Wait until the launcher and every process of its group are gone; False if some remain."""
    deadline = time.monotonic() + seconds
    try:
        process.wait(seconds)
    except subprocess.TimeoutExpired:
        return False
    while _group_alive(process.pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(POLL_SECONDS)
    return True


def _stop_group(process: subprocess.Popen) -> None:
    """SIGTERM the run's whole process group (launchers have children), SIGKILL what lingers, and
    return only once the group is gone: a launcher's workers can outlive it by seconds."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        if _wait_group(process, TERMINATE_GRACE_SECONDS):
            return


def _wait_all(processes: list[subprocess.Popen], deadline: float) -> int | None:
    """Wait for every process; the first non-zero exit stops the others (a node that died leaves
    its peers waiting at a rendezvous). None when the deadline passed first."""
    while time.monotonic() < deadline:
        codes = [process.poll() for process in processes]
        failed = [code for code in codes if code not in (None, 0)]
        if failed:
            for process in processes:
                _stop_group(process)
            return failed[0]
        if all(code == 0 for code in codes):
            return 0
        time.sleep(POLL_SECONDS)
    return None


def execute(command: list[str], env: dict[str, str], timeout: float, log_path: Path) -> Outcome:
    """Run `command` in its own process group, output to `log_path`, killed after `timeout` s."""
    return execute_nodes([NodeCommand(None, command)], env, timeout, log_path)


def execute_nodes(nodes: list[NodeCommand], env: dict[str, str], timeout: float, log_path: Path) -> Outcome:
    """Start every node's command (each in its own process group), wait for all, one log (made
    anew, never written through a link or a hard link left at its name: `safe_files.fresh_stream`).

    Past `timeout`, or when this process is interrupted (Ctrl-C, SIGTERM), every group is
    stopped before returning or re-raising; the first non-zero exit code is the outcome's. If
    this process is killed instead, the run's watchdog kills what the run started.
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    env = isolated_environment(env)
    start = time.perf_counter()
    deadline = time.monotonic() + timeout
    processes: list[subprocess.Popen] = []
    with fresh_stream(log_path.parent, log_path.name) as log, RunWatchdog(env, log) as watchdog:
        try:
            for node in nodes:
                argv, node_env = node_argv(node, env)
                log.write(f"$ {shlex.join(argv)}\n")
                log.flush()
                processes.append(
                    subprocess.Popen(
                        argv,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        stdin=subprocess.DEVNULL,
                        env=node_env,
                        start_new_session=True,
                    )
                )
                watchdog.launched(processes[-1].pid)
            returncode: int | None = _wait_all(processes, deadline)
            timed_out = returncode is None
            if timed_out:
                for process in processes:
                    _stop_group(process)
        except BaseException:
            for process in processes:
                _stop_group(process)
            raise
    return Outcome(returncode, timed_out, time.perf_counter() - start, log_tail(log_path))
