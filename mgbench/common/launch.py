"""Starting runs: which interpreter, which launcher, and a subprocess with a timeout.

Multi-process strategies go through the frameworks' own launchers (torchrun, mpiexec,
horovodrun), never a home-made one, so what mgbench measures is what users run. Each
framework runs with the interpreter of its virtual environment (`.venvs/<env>/bin/python`)
when that exists, else with the interpreter running mgbench.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import mgbench
from mgbench.frameworks import FrameworkSpec, Launcher

VENVS_ENV = "MGBENCH_VENVS"
TERMINATE_GRACE_SECONDS = 10.0
LOG_TAIL_LINES = 25
LAUNCHER_ENV_MARKERS = ("TORCHELASTIC_RUN_ID", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "HOROVOD_RANK")


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


def launched_by_launcher() -> bool:
    """True inside a process started by torchrun, mpiexec or horovodrun."""
    return any(marker in os.environ for marker in LAUNCHER_ENV_MARKERS)


def launch_command(interpreter: str, launcher: Launcher, processes: int, run_args: list[str]) -> list[str]:
    """The command line that starts `mgbench run` under the strategy's launcher."""
    inner = ["-m", "mgbench", "run", *run_args]
    if launcher == "inprocess":
        return [interpreter, *inner]
    if launcher == "torchrun":
        return [interpreter, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={processes}", *inner]
    if launcher == "mpirun":
        mpiexec = shutil.which("mpiexec") or "mpiexec"
        root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
        return [mpiexec, *root, "-n", str(processes), interpreter, *inner]
    if launcher == "horovodrun":
        return [interpreter, "-m", "horovod.runner.launch", "-np", str(processes), interpreter, *inner]
    raise ValueError(f"unknown launcher {launcher!r}")


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


def _stop_group(process: subprocess.Popen) -> None:
    """SIGTERM the run's whole process group (launchers have children), SIGKILL if it lingers."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(TERMINATE_GRACE_SECONDS)
            return
        except subprocess.TimeoutExpired:
            continue


def execute(command: list[str], env: dict[str, str], timeout: float, log_path: Path) -> Outcome:
    """Run `command` in its own process group, output to `log_path`, killed after `timeout` s."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with log_path.open("w") as log:
        log.write(f"$ {shlex.join(command)}\n")
        log.flush()
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, start_new_session=True
        )
        try:
            returncode: int | None = process.wait(timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            _stop_group(process)
            returncode, timed_out = None, True
        except BaseException:
            _stop_group(process)
            raise
    return Outcome(returncode, timed_out, time.perf_counter() - start, log_tail(log_path))
