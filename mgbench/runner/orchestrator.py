"""Executes the planned runs of a compare (`mgbench.runner.plan`), one subprocess tree at a time.

Each launched run is its own subprocess (under its launcher and with its framework's interpreter),
watched by the device monitor and bounded by a timeout. Whatever happens to it, exactly one
round is recorded as soon as it ends (`mgbench.runner.rounds`: `rounds.jsonl`, and the run's row
in `results.jsonl`), so a crash, a hang or an out-of-memory in one framework never costs the rows
of the others.

A run that runs out of memory is retried with half the batch per device (down to 1), and its
row records the batch that ran and the retries. Ctrl-C or SIGTERM stops the current run's
process groups and leaves an `interrupted` round; a resumed compare keeps the rounds already
done (`rounds.resumed_book`).
"""

from __future__ import annotations

import json
import os
import re
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from mgbench.core.config import RunConfig
from mgbench.core.errors import UsageError
from mgbench.core.job import GPU_BATCH_PER_DEVICE
from mgbench.frameworks.memory import DeviceMemory
from mgbench.frameworks.specs import FrameworkSpec
from mgbench.machine.devices import visible_gpus
from mgbench.records.bandwidth import BandwidthReport, annotate_allreduce
from mgbench.records.breakdown_record import attach_breakdown, attach_host_bottleneck
from mgbench.records.figures import OomRetries, Origin
from mgbench.records.peak import annotate_work
from mgbench.records.results import RunResult, Status
from mgbench.records.runfolder import RunFolder
from mgbench.records.utilisation import attach_utilisation
from mgbench.runner.counting import cache_environment, model_work
from mgbench.runner.hosts import Host
from mgbench.runner.launch import execute_nodes, interpreter_for
from mgbench.runner.launchers import Launch, NodeCommand, launcher_for
from mgbench.runner.monitor import DeviceMonitor
from mgbench.runner.plan import PlannedRun
from mgbench.runner.rounds import RoundBook
from mgbench.runner.scratch import run_scratch
from mgbench.training.driver import LAUNCH_TIME_ENV

RDZV_PORT_ENV = "MGBENCH_RDZV_PORT"
DEFAULT_RDZV_PORT = 29400
MAX_PORT = 65535
DEFAULT_TIMEOUT_SECONDS = 1200.0
"""Seconds a run may take where `--timeout` does not say (`compare`, `run`)."""


def child_environment(config: RunConfig, spec: FrameworkSpec) -> dict[str, str]:
    """The run's environment: the launch clock, CPU threads shared fairly between CPU 'devices',
    the compilers' caches where runs share them (`counting.cache_environment`), and what the
    framework reads at import (`FrameworkSpec.environment_variables`), last."""
    env = dict(os.environ)
    env[LAUNCH_TIME_ENV] = repr(time.time())
    env["PYTHONUNBUFFERED"] = "1"
    env.update(cache_environment(env))
    if not config.job.device_kind.on_gpu:
        env["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // config.devices))
    env.update(spec.variables_for(config))
    return env


CAUSE_PATTERN = re.compile(
    r"^(?P<prefix>(?:\[[^\]]*\]:?\s*(?:<std\w+>:)?\s*)*)"
    r"(?P<cause>mgbench: error: .+|[\w.]*(?:Error|Exception|Interrupt)\b: .+)$"
)
"""A line that names why a run failed: mgbench's own one-line error, or an exception's last line,
after the launchers' prefixes, which name the rank: mpiexec's `[0]<stderr>:`, torch.distributed's
`[rank0]: ` on a worker's traceback, torchrun's `[default0]:` on a worker's output."""

OWN_ERROR = "mgbench: error: "

WRAPPERS = (
    "ChildFailedError",
    "Horovod detected that one or more processes exited",
    "CalledProcessError",
    "in DataLoader worker process",
)
"""Errors that only relay another (a launcher about its worker, a DataLoader about its worker
process): they name no cause of their own, which appears further down the log."""

FOLLOW_ONS = (
    "connection closed by peer",
    "connection reset by peer",
    "remote peer closed the connection",
    "broken pipe",
    "communicator was aborted",
    "ncclremoteerror",
    "remote process exit",
    "watchdog caught collective operation timeout",
    "distbackenderror",
    "distnetworkerror",
    "horovodinternalerror",
)
"""What a rank's collective raises when another rank died (gloo's closed connection, NCCL's
aborted communicator, Horovod's shut-down): real errors, but consequences of the cause, which
the rank that died first printed."""


@dataclass(frozen=True)
class CauseLine:
    """A log line naming an error: whose it is (`rank`: the last number of its launcher prefix,
    '' without one), its text without prefixes, where it is in the log, and its `weight`:
    0 for mgbench's own error, 1 for an exception, 2 for a collective's follow-on (`FOLLOW_ONS`)."""

    rank: str
    text: str
    position: int
    weight: int

    @classmethod
    def parse(cls, line: str, position: int) -> CauseLine | None:
        """The cause a line names; None for any other line and for a wrapper (`WRAPPERS`)."""
        match = CAUSE_PATTERN.match(line.strip())
        if not match or any(wrapper in line for wrapper in WRAPPERS):
            return None
        rank = (re.findall(r"\d+", match["prefix"]) or [""])[-1]
        text = match["cause"]
        if text.startswith(OWN_ERROR):
            return cls(rank, text.removeprefix(OWN_ERROR), position, 0)
        return cls(rank, text, position, 2 if any(f in text.lower() for f in FOLLOW_ONS) else 1)


def failure_cause(log: str, returncode: int | None) -> str:
    """The first line of a failed row: the error of the rank that failed first, else the exit code.

    Each rank's error is its own mgbench error if it printed one, else the last exception line of
    its output: a traceback ends with the exception that ended the rank, after any it was raised
    while handling. Of the ranks' errors, mgbench's own come first, then exceptions, then the
    follow-ons of collectives (`FOLLOW_ONS`: a rank whose peer died prints one, often after the
    peer's traceback and with no word of its cause); among equals, the one printed first.
    """
    per_rank: dict[str, CauseLine] = {}
    for position, line in enumerate(log.splitlines()):
        cause = CauseLine.parse(line, position)
        if cause and (cause.rank not in per_rank or cause.weight <= per_rank[cause.rank].weight):
            per_rank[cause.rank] = cause
    if not per_rank:
        return f"exit code {returncode}"
    return min(per_rank.values(), key=lambda cause: (cause.weight, cause.position)).text


def seconds_text(seconds: float) -> str:
    """Seconds with the digits they need: `1200`, `0.01` (a timeout of 0.01 s is not "0 s")."""
    return repr(float(seconds)).removesuffix(".0")


def classify_failure(timed_out: bool, cause: str, log: str, memory: DeviceMemory) -> Status:
    """`timeout` past the timeout; `oom` where the failing rank's cause line or the run's whole log
    says it ran out of device memory, by its framework's own words (`DeviceMemory.ran_out`: a
    launcher's banner after the worker's traceback hides nothing); else `failed`."""
    if timed_out:
        return Status.TIMEOUT
    return Status.OOM if memory.ran_out(cause, log) else Status.FAILED


def spans_hosts(config: RunConfig, hosts: list[Host] | None) -> bool:
    """A run spans the hosts when it asks for all their slots; smaller runs stay on this machine."""
    return hosts is not None and len(hosts) > 1 and config.devices == sum(host.slots for host in hosts)


def rendezvous_port_setting() -> int | None:
    """MGBENCH_RDZV_PORT's port (None where it is not set): a port number, 1 to 65535, else one
    UsageError. A compare with hosts reads it before anything is written: `abc` would otherwise end
    it in a traceback when the first run spanning the hosts starts, the rows before left unreported."""
    text = os.environ.get(RDZV_PORT_ENV)
    if not text:
        return None
    port = int(text) if text.strip().isdecimal() else 0
    if not 1 <= port <= MAX_PORT:
        raise UsageError(f"{RDZV_PORT_ENV} takes a port number, 1 to {MAX_PORT}, got {text!r}")
    return port


def rendezvous_port(hosts: list[Host]) -> int:
    """A free port here when the first host is this machine, else MGBENCH_RDZV_PORT (default 29400)."""
    if (port := rendezvous_port_setting()) is not None:
        return port
    if not hosts[0].is_local:
        return DEFAULT_RDZV_PORT
    with socket.socket() as probe:
        probe.bind(("", 0))
        return probe.getsockname()[1]


def execute_run(
    run: PlannedRun, folder: RunFolder, timeout: float, state_path: Path | None = None, hosts: list[Host] | None = None
) -> RunResult:
    """One run in its own subprocess(es); always returns a result, a failure row if it did not finish.

    A run planning refused gets its row without launching. A finished row gets its devices'
    utilisation over its steady window from the trace the monitor kept (`utilisation`).
    `state_path`, when given, receives the trained weights (equivalence checks). With `hosts`, a
    run asking for all their slots is launched across them (`spans_hosts`).
    """
    refused = run.refused_row()
    if refused is not None:
        return refused
    config, spec, strategy = run.config, run.framework, run.strategy
    multinode = spans_hosts(config, hosts)
    launcher = launcher_for(strategy.launcher)
    if multinode and launcher.one_process:
        return RunResult(
            config, Status.UNSUPPORTED, error=f"{config.strategy} runs in one process; it cannot span hosts"
        )
    interpreter = interpreter_for(spec)
    config_file = folder.write(folder.config_file(config.run_id), config.to_json())
    raw = folder.with_folder(folder.raw_result(config.run_id))
    raw.unlink(missing_ok=True)
    run_args = ["--config", str(config_file), "--result-file", str(raw)]
    if state_path is not None:
        run_args += ["--save-state", str(state_path)]
    if config.job.profile_steps:
        run_args += ["--profile-dir", str(folder.made(folder.profile_dir(config.run_id)))]
    if multinode:
        assert hosts is not None
        nodes = launcher.node_commands(
            Launch(interpreter, run_args, run_id=config.run_id, port=rendezvous_port(hosts)), hosts
        )
    else:
        nodes = [NodeCommand(None, launcher.command(Launch(interpreter, run_args), config.devices))]
    gpus = [gpu.index for gpu in visible_gpus()[: config.devices]] if config.job.device_kind.on_gpu else []
    with DeviceMonitor(folder.with_folder(folder.trace(config.run_id)), gpus), run_scratch() as scratch:
        env = {**child_environment(config, spec), **scratch}
        outcome = execute_nodes(nodes, env, timeout, folder.with_folder(folder.log(config.run_id)))
    command_text = "\n".join(" ".join(node.argv) for node in nodes)
    if outcome.returncode == 0 and raw.exists():
        result = RunResult.from_record(json.loads(raw.read_text()))
        result.origin.command = command_text
        if config.job.profile_steps:
            attach_breakdown(result, folder.profile_dir(config.run_id))
        attach_host_bottleneck(result)
        attach_utilisation(result, folder.trace(config.run_id))
        return result
    log = "" if outcome.timed_out else folder.log(config.run_id).read_text(errors="replace")
    cause = "" if outcome.timed_out else failure_cause(log, outcome.returncode)
    status = classify_failure(outcome.timed_out, cause, log, spec.memory)
    if outcome.timed_out:
        error = f"timed out after {seconds_text(timeout)} s\n{outcome.log_tail}"
    else:
        error = f"{cause} (exit code {outcome.returncode})\n{outcome.log_tail}"
    origin = Origin(command=command_text, interpreter=interpreter, wall_seconds=outcome.seconds)
    return RunResult(config, status, error=error, origin=origin)


@dataclass(frozen=True)
class RunEvent:
    """What happens to a run before its row exists: it `start`s (its log at `log`), or it ran out of
    memory and is `retry`ing with the batch in `config`; `round` says which round
    (`round 2/3`; "" where the compare runs one). A progress display listens to these."""

    kind: Literal["start", "retry"]
    config: RunConfig
    log: Path
    round: str = ""


def halved(batch: int, times: int) -> list[int]:
    """`batch` and each half of it, `times` halvings in all: the batches a run out of memory tries."""
    return [batch >> step for step in range(times + 1)]


def batch_warnings(run: PlannedRun, result: RunResult) -> list[str]:
    """What an ok row says of its batch where it is not the job's, so that no one sets it beside
    rows at another batch as the same job: the framework's own default for the model
    (`DeviceMemory.gpu_batches`), or the batch running out of memory halved it to. And where
    `--gpu-memory-gb` asked for a cap its framework has none of, that it was not capped."""
    config, memory = run.config, run.framework.memory
    if result.status != Status.OK:
        return []
    unit = "per GPU" if config.job.device_kind.on_gpu else "per device"
    warnings = []
    if (own := memory.gpu_batch(config.job)) is not None:
        warnings.append(
            f"{config.framework} trains {config.job.model} at its own default of {own.batch_per_device} {unit}, "
            f"not the job's {GPU_BATCH_PER_DEVICE}: {own.why}"
        )
    if result.retries.oom_retries:
        ran = result.config.job.batch_per_device
        warnings.append(f"out of memory at {config.job.batch_per_device} {unit}; ran at {ran}")
    if config.job.gpu_memory_gb is not None and memory.cap is None:
        warnings.append(f"not capped to {config.job.gpu_memory_gb:g} GiB: {config.framework} has no memory cap here")
    return warnings


def out_of_memory_error(run: PlannedRun, result: RunResult, tried: list[int]) -> str:
    """The first line of a row that ran out of memory at every batch down to the last it tried."""
    unit = "per GPU" if run.config.job.device_kind.on_gpu else "per device"
    return (
        f"out of memory at {tried[-1]} {unit} (tried {', '.join(map(str, tried))}); "
        f"set a smaller model, --image-size or --batch-per-gpu\n{result.error or ''}"
    )


def execute_with_oom_retry(
    run: PlannedRun,
    folder: RunFolder,
    timeout: float,
    hosts: list[Host] | None = None,
    on_event: Callable[[RunEvent], None] = lambda event: None,
    round_label: str = "",
    fitted: int = 0,
) -> RunResult:
    """`execute_run`, restarted with half the batch per device while it runs out of memory (down to 1).

    The row keeps the batch that ran in `batch_per_device`, the one planned in
    `requested_batch_per_device` and the halvings from the one to the other in `oom_retries`; an ok
    row at a batch other than the job's says so in its `warnings` (`batch_warnings`), one out of
    memory at 1 names the batches it tried. A round after one that ran out of memory starts where
    that one fitted (`fitted`: the halvings it took, `RoundBook.fitted`) instead of paying for
    the same restarts again.
    """
    requested = run.config.job.batch_per_device
    retries = fitted
    trying = replace(run, config=run.config.with_changes(batch_per_device=requested >> retries))
    on_event(RunEvent("start", trying.config, folder.log(run.config.run_id), round_label))
    result = execute_run(trying, folder, timeout, hosts=hosts)
    while result.status == Status.OOM and trying.config.job.batch_per_device > 1:
        retries += 1
        trying = replace(run, config=run.config.with_changes(batch_per_device=requested >> retries))
        on_event(RunEvent("retry", trying.config, folder.log(run.config.run_id), round_label))
        result = execute_run(trying, folder, timeout, hosts=hosts)
    result.retries = OomRetries(requested, retries)
    if result.status == Status.OOM:
        result.error = out_of_memory_error(run, result, halved(requested, retries))
    result.warnings += batch_warnings(run, result)
    return result


def run_compare(
    book: RoundBook,
    folder: RunFolder,
    timeout: float,
    on_result: Callable[[RunResult], None] = lambda result: None,
    hosts: list[Host] | None = None,
    bandwidth: BandwidthReport | None = None,
    on_event: Callable[[RunEvent], None] = lambda event: None,
) -> list[RunResult]:
    """Every round `book` still owes, interleaved: every run once, then every one again
    (`mgbench.runner.rounds`), each round's row recorded as soon as it ends (then `on_result`);
    `on_event` hears each start and out-of-memory retry. Returns each run's combined row.

    Every ok round gets its model's work per image, achieved TFLOP/s and share of the device's
    peak (`work.annotate_work`; the measured matmul peak of `bandwidth` where given).
    Ctrl-C / SIGTERM (as KeyboardInterrupt) during a run stops it, records an `interrupted`
    round for it and ends the compare early; the rounds recorded so far stay.
    """
    for number, due in book.rounds_owed():
        for run in due:
            label = f"round {number}/{book.repeat}" if book.repeat > 1 else ""
            try:
                result = execute_with_oom_retry(run, folder, timeout, hosts, on_event, label, book.fitted(run))
            except KeyboardInterrupt:
                result = RunResult(
                    run.config, Status.INTERRUPTED, error="interrupted (Ctrl-C or SIGTERM): the run was stopped"
                )
                book.record(folder, result)
                on_result(result)
                return book.rows()
            if bandwidth is not None:
                annotate_allreduce(result, bandwidth, run.strategy.communication)
            if result.status == "ok":
                annotate_work(result, model_work(result.config.job.model, result.config.job.input_size), bandwidth)
            book.record(folder, result)
            on_result(result)
    return book.rows()
