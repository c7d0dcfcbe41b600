"""A compare as a service, apart from the command line: planned into a folder, resumed, and its
rounds run and recorded, each row as it ends.

A new compare checks what it can before it writes anything (device counts, strategies, the
dataset against every planned batch, the installations), then claims a folder no other compare
used; a resumed one reads its recorded plan, refuses a folder whose rows do not fit it, checks
the runs still owed (hosts, device counts, dataset, starting point) again as a new one would, and
keeps only the rounds already done. What the user should read on the way
goes to the caller's `Voice`; the caller owns the console, the live display and the reports.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from mgbench.core.errors import UsageError
from mgbench.core.initial_weights import InitialWeights
from mgbench.core.job import Job
from mgbench.core.kinds import DeviceKind
from mgbench.core.wording import counted
from mgbench.datasets.resolve import check_dataset, recheck_dataset
from mgbench.frameworks.registry import framework_spec
from mgbench.machine.devices import check_device_counts
from mgbench.records.bandwidth import BANDWIDTH_FILE, BandwidthReport
from mgbench.records.compare_plan import ComparePlan
from mgbench.records.results import RunResult, write_json_atomically
from mgbench.records.runfolder import LOCK_FILE, RunFolder
from mgbench.runner.bandwidth import bandwidth_report
from mgbench.runner.hosts import Host, resolve_hosts
from mgbench.runner.orchestrator import DEFAULT_TIMEOUT_SECONDS, RunEvent, rendezvous_port_setting, run_compare
from mgbench.runner.plan import PlannedRun, Scaling, installed_runs, not_installed_reason, plan_runs, replan
from mgbench.runner.rounds import RoundBook, default_rounds, recorded_rounds, rounds_off_plan
from mgbench.runner.starting_point import check_start_again, record_start
from mgbench.runner.venvs import inspect_installation
from mgbench.training.compile_cache import cold_environment


@dataclass(frozen=True)
class Voice:
    """What a compare says to whoever runs it, a line at a time."""

    note: Callable[[str], None]
    """A line that stops nothing but should be read (what reading a dataset decided, a framework
    left out)."""
    progress: Callable[[str], None]
    """What the compare does next."""


@dataclass(frozen=True)
class NewCompare:
    """What a new compare is asked: the job (sized, and the note on its size), the frameworks
    (each with the family it was named through), strategies (None: each framework's defaults),
    device counts, scaling, and the options the plan records."""

    job: Job
    size_note: str | None
    frameworks: list[tuple[str, str | None]]
    strategies: list[str] | None
    counts: list[int]
    scaling: Scaling
    command: str
    out: Path | None = None
    hosts: str | None = None
    timeout: float | None = None
    bandwidth: bool = False
    repeat: int | None = None
    cold_cache: bool = False


def refuse_used_folder(path: Path) -> None:
    """A new compare refuses a folder that holds anything but a measured `bandwidth.json` (which
    it reuses) and a lock file left by a compare that is gone: its rows would mix with another
    compare's, and speed-ups be taken against them."""
    held = {entry.name for entry in path.iterdir()} - {BANDWIDTH_FILE, LOCK_FILE} if path.is_dir() else set()
    if held:
        compare = RunFolder(path).compare_file.exists()
        hint = (
            f"it holds a compare; continue it with mgbench compare --resume {path}"
            if compare
            else "it holds other files"
        )
        raise UsageError(f"--out {path} is not empty ({hint}); choose a new --out")


def prepare_folder(path: Path, new: bool) -> RunFolder:
    """The run folder, checked (`refuse_used_folder` for a `new` compare, a `bandwidth.json` that
    is not one mgbench measured refused up front), created and checked writable. A folder
    another compare holds is refused first, naming the holder."""
    if path.is_dir():
        RunFolder(path).lock().refuse_if_held()
    if new:
        refuse_used_folder(path)
    if path.exists() and not path.is_dir():
        raise UsageError(f"--out {path} is a file, not a folder")
    if (path / BANDWIDTH_FILE).is_file():
        BandwidthReport.read(path / BANDWIDTH_FILE)
    folder = RunFolder(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
        # Written as every file of the folder is (RunFolder.write): a link planted at the name is replaced.
        folder.write(path / ".write-test", "").unlink()
    except OSError as error:
        raise UsageError(f"cannot write to run folder {path}: {error.strerror}") from None
    return folder


def folder_to_resume(path: Path) -> RunFolder:
    """The folder of a compare to resume: one holding its recorded plan, prepared (`prepare_folder`)."""
    recorded = RunFolder(path).compare_file
    if not recorded.exists():
        raise UsageError(f"--resume: {recorded} not found (not a compare run folder)")
    return prepare_folder(path, new=False)


def check_host_counts(counts: list[int], hosts: list[Host], kind: DeviceKind) -> None:
    """With hosts, a count is either all their slots (spans them) or fits on this machine."""
    total = sum(host.slots for host in hosts)
    for count in counts:
        if count != total and count > hosts[0].slots:
            raise UsageError(f"--gpus {count} with --hosts: use at most {hosts[0].slots} (one host) or {total} (all)")
    check_device_counts([c for c in counts if c != total], kind)


def checked_hosts(text: str | None) -> list[Host] | None:
    """The hosts `--hosts` (or a recorded plan) names, None without, and the rendezvous port the
    runs spanning them would take (`MGBENCH_RDZV_PORT`) checked with them, before anything runs."""
    if text is None:
        return None
    hosts = resolve_hosts(text)
    rendezvous_port_setting()
    return hosts


def check_counts(counts: list[int], kind: DeviceKind, hosts: list[Host] | None) -> None:
    """Device counts of `kind` this machine, or with `hosts` these hosts, can run."""
    if hosts:
        check_host_counts(counts, hosts, kind)
    else:
        check_device_counts(counts, kind)


def check_resumed_runs(runs: list[PlannedRun], hosts: list[Host] | None) -> None:
    """The runs a resume is to launch fit this machine as a new compare's must (`check_counts`):
    a `compare.json` edited to 64 devices, or a CUDA plan resumed where no GPU is, is refused
    before anything starts instead of launching a process per device."""
    for kind in sorted({run.config.job.device_kind for run in runs}):
        check_counts(sorted({run.config.devices for run in runs if run.config.job.device_kind == kind}), kind, hosts)


def installation_reasons(
    frameworks: list[tuple[str, str | None]], voice: Voice
) -> tuple[dict[str, str | None], list[str]]:
    """The frameworks to run, each with why it is not installed (None: it is), and the lines
    saying which were left out.

    A framework named directly that is not installed still gets its rows (`not-installed`); a
    family member (`--frameworks keras`) that is not installed is left out with one line, so
    the family runs on the backends this machine has.
    """
    reasons, left_out = {}, []
    for name, family in frameworks:
        spec = framework_spec(name)
        found = inspect_installation(spec)
        if family and not found.installed:
            missing = ", ".join(found.missing)
            left_out.append(f"{family}: {name} left out: {missing} not installed ({spec.install_hint})")
            voice.note(left_out[-1])
            continue
        reasons[name] = not_installed_reason(spec, found)
    if not reasons:
        raise UsageError("none of the named frameworks is installed: " + ", ".join(name for name, _ in frameworks))
    return reasons, left_out


def plan_compare(asked: NewCompare, voice: Voice) -> tuple[RunFolder, ComparePlan, list[PlannedRun]]:
    """The run folder (created, nothing written in it yet), the plan and its runs."""
    job = asked.job
    check_counts(asked.counts, job.device_kind, checked_hosts(asked.hosts))
    # Names, strategies and batch splits checked, and the dataset against every planned batch,
    # before the installation probes start a process per framework.
    names = [name for name, _ in asked.frameworks]
    runs = plan_runs(job, names, asked.strategies, asked.counts, asked.scaling)
    job = check_dataset(job, [run.config for run in runs], on_note=voice.note)
    if job.skipped_images:
        voice.note(f"--skip-bad-images: {len(job.skipped_images)} images that cannot be decoded left out")
    reasons, left_out = installation_reasons(asked.frameworks, voice)
    runs = installed_runs([run.with_dataset_check(job) for run in runs], reasons)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    folder = prepare_folder(asked.out or Path("runs") / f"{stamp}-{job.model}", new=True)
    if asked.size_note:
        voice.note(asked.size_note)
    plan = ComparePlan(
        asked.command,
        [run.config for run in runs],
        DEFAULT_TIMEOUT_SECONDS if asked.timeout is None else asked.timeout,
        asked.hosts,
        asked.bandwidth,
        asked.scaling,
        left_out=left_out,
        job_shrink=asked.size_note,
        repeat=default_rounds(job.device_kind) if asked.repeat is None else asked.repeat,
        cold_cache=asked.cold_cache,
    )
    return folder, plan, runs


def start_new(folder: RunFolder, plan: ComparePlan, start: InitialWeights | None) -> None:
    """A new compare's first files, once it holds its folder: the plan, and the starting point
    its runs share (`start`, drawn before anything was written: `starting_point.shared_start`)."""
    refuse_used_folder(folder.root)
    write_json_atomically(folder.compare_file, plan.to_json())
    if plan.configs:
        record_start(folder, plan.configs[0], start)


def resumed_book(folder: RunFolder, runs: list[PlannedRun], repeat: int, hosts: list[Host] | None) -> RoundBook:
    """The rounds of the folder a resume keeps (`RoundBook.kept`), the folder refused in one line
    where they do not fit its recorded plan's `runs` (`rounds_off_plan`: rows would be dropped or
    stand for another job), or the runs still owed do not fit this machine or `hosts`
    (`check_resumed_runs`)."""
    recorded = recorded_rounds(folder)
    if off_plan := rounds_off_plan(runs, recorded):
        raise UsageError(
            f"--resume {folder.root}: its rows do not fit the plan in {folder.compare_file.name} "
            f"({'; '.join(off_plan)}); resuming would drop or mix them: restore the plan or start a new compare"
        )
    book = RoundBook.kept(runs, repeat, recorded)
    try:
        check_resumed_runs([run for run in book.owed() if run.refusal is None], hosts)
    except UsageError as error:
        raise UsageError(f"--resume {folder.root}: the recorded plan cannot run here: {error}") from None
    return book


def plan_resume(
    folder: RunFolder, command: str, timeout: float | None, repeat: int | None, voice: Voice
) -> tuple[ComparePlan, RoundBook]:
    """The recorded plan of the folder (one run per run_id, `ComparePlan`) and its rounds
    (`resumed_book`): the runs that still owe one have their hosts, device counts, dataset and
    starting point checked again as a new compare checks them (`recheck_dataset`,
    `check_start_again`) before anything is written; then its
    results keep only the rounds already done (`RoundBook.kept`), and a starting point missing
    from the folder is written. `command` joins the plan's `resumed` list; a `timeout` or
    `repeat` given now replaces the recorded one."""
    plan = ComparePlan.read(folder.compare_file)
    hosts = checked_hosts(plan.hosts)
    missing = {
        name: not_installed_reason(framework_spec(name), inspect_installation(framework_spec(name)))
        for name in {config.framework for config in plan.configs}
    }
    runs = [replan(config, missing[config.framework]) for config in plan.configs]
    if repeat is not None:
        plan.repeat = repeat
    book = resumed_book(folder, runs, plan.repeat, hosts)
    if owed := book.owed():
        recheck_dataset(owed[0].config.job, [run.config for run in owed], on_note=voice.note)
    start = check_start_again(folder, plan.configs[0], book.rows()) if plan.configs else None
    book.rewrite(folder)
    if plan.configs:
        record_start(folder, plan.configs[0], start)
    plan.resumed.append(command)
    if timeout is not None:
        plan.timeout = timeout
    write_json_atomically(folder.compare_file, plan.to_json())
    return plan, book


def run_rounds(
    folder: RunFolder,
    plan: ComparePlan,
    book: RoundBook,
    voice: Voice,
    on_result: Callable[[RunResult], None],
    on_event: Callable[[RunEvent], None],
) -> None:
    """The rounds still owed, each row recorded as it ends (`run_compare`), after the folder's
    bandwidth.json where the plan asks for one; where it asks for cold caches, every run compiles
    from empty ones (`compile_cache.cold_environment`), new compare or resumed alike."""
    runs = book.owed()
    if not (book.runs and book.runs[0].config.job.device_kind.on_gpu):
        voice.note("No GPU visible: CPU devices stand in for GPUs (processes or logical devices).")
    rounds = f", {plan.repeat} rounds each" if plan.repeat > 1 else ""
    voice.progress(f"{counted(len(runs), 'run')}{rounds} -> {folder.root}")
    hosts = resolve_hosts(plan.hosts) if plan.hosts else None
    timeout = DEFAULT_TIMEOUT_SECONDS if plan.timeout is None else plan.timeout
    bandwidth = bandwidth_report(folder, runs, plan.bandwidth, voice.progress, voice.note)
    with cold_environment(plan.cold_cache):
        run_compare(book, folder, timeout, on_result, hosts=hosts, bandwidth=bandwidth, on_event=on_event)
