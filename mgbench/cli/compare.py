"""`mgbench compare`: every named framework and strategy on 1 and on N devices, side by side.

Each row lands in `results.jsonl` as its run ends. Ctrl-C or SIGTERM stops the current run,
keeps the finished rows, writes the summary of what exists and exits 130; `--resume RUN_DIR`
then runs only what is not done yet, from the configs recorded in `compare.json`. A compare,
new or resumed, holds its folder's lock (`RunFolder.claimed`) from the first file it writes there
to its end, so a second one into the same folder (or a report of it) is refused instead of
mixing its rows in.
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from mgbench.cli.interrupts import INTERRUPTED_EXIT_CODE
from mgbench.cli.live import heartbeat_seconds, live_compare
from mgbench.cli.options import add_job_options, job_from_args, parse_device_counts
from mgbench.cli.report import add_format_option
from mgbench.cli.starting_point import check_start_again, record_start, shared_start
from mgbench.cli.values import folder_path, hosts_text, positive_seconds, rounds_count
from mgbench.core.errors import UsageError
from mgbench.core.kinds import DeviceKind
from mgbench.datasets.resolve import check_dataset, recheck_dataset
from mgbench.frameworks.registry import expand_frameworks, framework_spec
from mgbench.machine.devices import check_device_counts
from mgbench.records.bandwidth import BANDWIDTH_FILE, DEFAULT_COPY_BYTES, DEFAULT_SIZES, BandwidthReport
from mgbench.records.compare_plan import ComparePlan
from mgbench.records.results import read_results, write_json_atomically
from mgbench.records.runfolder import LOCK_FILE, RunFolder
from mgbench.records.scaling import add_scaling_figures
from mgbench.reports.compact import print_summary
from mgbench.reports.html import write_report
from mgbench.reports.summary import write_summary
from mgbench.runner.bandwidth import BANDWIDTH_LOG, measure_bandwidth
from mgbench.runner.hosts import Host, resolve_hosts
from mgbench.runner.orchestrator import run_compare
from mgbench.runner.plan import PlannedRun, installed_runs, not_installed_reason, plan_runs, replan
from mgbench.runner.rounds import CPU_ROUNDS, GPU_ROUNDS, RoundBook, default_rounds, recorded_rounds
from mgbench.runner.venvs import inspect_installation

DEFAULT_TIMEOUT_SECONDS = 1200.0
FAILED = ("failed", "timeout", "oom", "not-installed")
RESUME_OPTIONS = {"resume", "timeout", "repeat"}
"""What `--resume` takes: the recorded plan is run as it was, only its timeout and its number of
rounds may change (`--repeat 5` adds rounds to a compare of 3)."""


def register(verbs: argparse._SubParsersAction) -> None:
    parser = verbs.add_parser("compare", help="run frameworks/strategies on 1 and N devices and compare them")
    add_arguments(parser)
    parser.set_defaults(handler=handle)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--frameworks",
        default=None,
        help="comma-separated, e.g. pytorch,keras (keras = Keras 3 on every installed backend; required unless --resume)",
    )
    parser.add_argument(
        "--strategies",
        default=None,
        help="comma-separated, or 'all' (default: each framework's default strategy, as `mgbench list` marks)",
    )
    parser.add_argument("--gpus", default="2", help="N (runs 1 and N) or a list such as 1,2,4 (default 2)")
    parser.add_argument("--scaling", default="weak", choices=("weak", "strong"), help="weak: batch per GPU fixed")
    parser.add_argument(
        "--timeout",
        type=positive_seconds,
        default=None,
        help=f"seconds per run (default {DEFAULT_TIMEOUT_SECONDS:.0f}; with --resume, the recorded one unless given)",
    )
    parser.add_argument("--out", type=folder_path, default=None, help="run folder (default runs/<time>-<model>)")
    parser.add_argument(
        "--resume", type=folder_path, default=None, metavar="RUN_DIR", help="rerun what is not done in RUN_DIR"
    )
    parser.add_argument(
        "--repeat",
        type=rounds_count,
        default=None,
        metavar="N",
        help=f"rounds: run every planned run N times, interleaved (all once, then all again); each row is "
        f"the median round's, with its spread (default {GPU_ROUNDS} on GPUs, {CPU_ROUNDS} on CPU devices; "
        "with --resume, the recorded number unless given)",
    )
    parser.add_argument(
        "--hosts",
        type=hosts_text,
        default=None,
        help="host1:4,host2:4 or 'slurm': the run on all their slots spans the hosts (torchrun, horovodrun, mpiexec)",
    )
    parser.add_argument(
        "--bandwidth",
        action="store_true",
        help="measure bandwidth.json first (reused if present) for all-reduce shares",
    )
    add_format_option(parser)
    add_job_options(parser)


def typed_options(argv: list[str]) -> set[str]:
    """The options `argv` (compare's arguments) gives, whatever their values: parsed again with
    every default None, so that `--gpus 2` counts although 2 is the default."""
    parser = argparse.ArgumentParser(add_help=False)
    add_arguments(parser)
    parser.set_defaults(**dict.fromkeys(vars(parser.parse_args([])), None))
    return {name for name, value in vars(parser.parse_known_args(argv)[0]).items() if value is not None}


def refuse_job_options(run_dir: Path, typed: set[str]) -> None:
    """`--resume` runs the recorded plan: an option that would change it is refused, not ignored."""
    ignored = sorted(typed - RESUME_OPTIONS)
    if ignored:
        names = ", ".join("--" + name.replace("_", "-") for name in ignored)
        raise UsageError(
            f"--resume runs the plan recorded in {run_dir}, so it takes no {names} (only --timeout and --repeat); "
            "start a new compare for another job"
        )


def typed_command(args: argparse.Namespace) -> str:
    """The command as typed (`args.argv`, from `mgbench.cli.main`), recorded in compare.json."""
    return shlex.join(["mgbench", *args.argv])


def _split(text: str | None) -> list[str] | None:
    """The names of a comma-separated option, each once: `--strategies ddp,ddp` is one `ddp` run per
    device count, not the same run twice (two rows of one run_id, a speed-up of a run against itself)."""
    if text is None:
        return None
    return list(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))


def say(console: Console) -> Callable[[str], None]:
    """How compare says a line that stops nothing but should be read (what reading a dataset decided)."""
    return lambda line: console.print(f"[yellow]{escape(line)}[/]")


def refuse_used_folder(path: Path) -> None:
    """A new compare refuses a folder that holds anything but a measured `bandwidth.json` (which
    it reuses) and a lock file left by a compare that is gone: its rows would mix with another
    compare's, and speed-ups be taken against them."""
    held = {entry.name for entry in path.iterdir()} - {BANDWIDTH_FILE, LOCK_FILE} if path.is_dir() else set()
    if held:
        hint = f"continue it with --resume {path}" if RunFolder(path).compare_file.exists() else "it holds other files"
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


def check_host_counts(counts: list[int], hosts: list[Host], kind: DeviceKind) -> None:
    """With hosts, a count is either all their slots (spans them) or fits on this machine."""
    total = sum(host.slots for host in hosts)
    for count in counts:
        if count != total and count > hosts[0].slots:
            raise UsageError(f"--gpus {count} with --hosts: use at most {hosts[0].slots} (one host) or {total} (all)")
    check_device_counts([c for c in counts if c != total], kind)


def installation_reasons(
    frameworks: list[tuple[str, str | None]], console: Console
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
            console.print(f"[yellow]{left_out[-1]}[/]")
            continue
        reasons[name] = not_installed_reason(spec, found)
    if not reasons:
        raise UsageError("none of the named frameworks is installed: " + ", ".join(name for name, _ in frameworks))
    return reasons, left_out


def plan_new(args: argparse.Namespace, console: Console) -> tuple[RunFolder, ComparePlan, list[PlannedRun]]:
    """The run folder (created, nothing written in it yet), the plan and its runs."""
    expanded = expand_frameworks(_split(args.frameworks) or [])
    if not expanded:
        raise UsageError("--frameworks is required (or --resume RUN_DIR)")
    counts = parse_device_counts(args.gpus)
    job, size_note = job_from_args(args)
    hosts = resolve_hosts(args.hosts) if args.hosts else None
    if hosts:
        check_host_counts(counts, hosts, job.device_kind)
    else:
        check_device_counts(counts, job.device_kind)
    # Names, strategies and batch splits checked, and the dataset against every planned batch,
    # before the installation probes start a process per framework.
    runs = plan_runs(job, [name for name, _ in expanded], _split(args.strategies), counts, args.scaling)
    job = check_dataset(job, [run.config for run in runs], on_note=say(console))
    if job.skipped_images:
        console.print(f"[yellow]--skip-bad-images: {len(job.skipped_images)} images that cannot be decoded left out[/]")
    reasons, left_out = installation_reasons(expanded, console)
    runs = installed_runs([run.with_dataset_check(job) for run in runs], reasons)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    folder = prepare_folder(args.out or Path("runs") / f"{stamp}-{job.model}", new=True)
    if size_note:
        console.print(f"[yellow]{size_note}[/]")
    timeout = DEFAULT_TIMEOUT_SECONDS if args.timeout is None else args.timeout
    plan = ComparePlan(
        typed_command(args),
        [run.config for run in runs],
        timeout,
        args.hosts,
        args.bandwidth,
        args.scaling,
        left_out=left_out,
        job_shrink=size_note,
        repeat=default_rounds(job.device_kind) if args.repeat is None else args.repeat,
    )
    return folder, plan, runs


def plan_resume(
    folder: RunFolder, command: str, timeout: float | None, repeat: int | None, console: Console
) -> tuple[ComparePlan, RoundBook]:
    """The recorded plan of the folder (one run per run_id, `ComparePlan`) and its rounds: the
    runs that still owe one have their dataset and starting point checked again as a new compare
    checks them (`recheck_dataset`, `check_start_again`) before anything is written; then its
    results keep only the rounds already done (`RoundBook.kept`), and a starting point missing
    from the folder is written. `command` joins the plan's `resumed` list; a `timeout` or
    `repeat` given now replaces the recorded one."""
    plan = ComparePlan.read(folder.compare_file)
    missing = {
        name: not_installed_reason(framework_spec(name), inspect_installation(framework_spec(name)))
        for name in {config.framework for config in plan.configs}
    }
    runs = [replan(config, missing[config.framework]) for config in plan.configs]
    if repeat is not None:
        plan.repeat = repeat
    book = RoundBook.kept(runs, plan.repeat, recorded_rounds(folder))
    if owed := book.owed():
        recheck_dataset(owed[0].config.job, [run.config for run in owed], on_note=say(console))
    start = check_start_again(folder, plan.configs[0], book.rows()) if plan.configs else None
    book.rewrite(folder)
    if plan.configs:
        record_start(folder, plan.configs[0], start)
    plan.resumed.append(command)
    if timeout is not None:
        plan.timeout = timeout
    write_json_atomically(folder.compare_file, plan.to_json())
    return plan, book


def bandwidth_report(
    folder: RunFolder, runs: list[PlannedRun], measure: bool, console: Console
) -> BandwidthReport | None:
    """The run folder's bandwidth.json: reused when present, measured first when asked for."""
    if not folder.bandwidth.exists() and measure and runs:
        devices = max(run.config.devices for run in runs)
        kind = runs[0].config.job.device_kind
        console.print(f"measuring bandwidth on {devices} {kind} devices -> {folder.bandwidth}")
        sizes = list(DEFAULT_SIZES)
        measure_bandwidth(folder, max(devices, 2), kind, sizes, DEFAULT_COPY_BYTES, 600.0)
        if not folder.bandwidth.exists():
            console.print(f"[yellow]bandwidth measurement failed; see {folder.log(BANDWIDTH_LOG)}[/]")
    return BandwidthReport.read(folder.bandwidth) if folder.bandwidth.exists() else None


def handle(args: argparse.Namespace) -> int:
    console = Console(stderr=True, soft_wrap=True)
    heartbeat_seconds()  # a bad MGBENCH_HEARTBEAT_SECONDS is refused before anything is written
    if args.resume:
        refuse_job_options(args.resume, typed_options(args.argv[1:]))
        recorded = RunFolder(args.resume).compare_file
        if not recorded.exists():
            raise UsageError(f"--resume: {recorded} not found (not a compare run folder)")
        folder = prepare_folder(args.resume, new=False)
    else:
        folder, plan, runs = plan_new(args, console)
        book = RoundBook(runs, plan.repeat)
        start = shared_start(plan.configs[0]) if plan.configs else None  # drawn before a file is written
    with folder.claimed() as lock:
        if lock and lock.taken_over:
            console.print(f"[yellow]{folder.root}: lock taken over from an mgbench that is gone ({lock.taken_over})[/]")
        if args.resume:
            plan, book = plan_resume(folder, typed_command(args), args.timeout, args.repeat, console)
        else:
            refuse_used_folder(folder.root)
            write_json_atomically(folder.compare_file, plan.to_json())
            if plan.configs:
                record_start(folder, plan.configs[0], start)
        hint = f"the rows written are kept; continue with: mgbench compare --resume {folder.root}"
        with folder.writing(hint):
            return run_planned(folder, plan, book, console, args.format)


def run_planned(folder: RunFolder, plan: ComparePlan, book: RoundBook, console: Console, summary_format: str) -> int:
    """The rounds still owed, each recorded as it ends, then the summary and the report; the exit
    code (1 where a round failed, even one whose run has a row from its other rounds)."""
    hosts = resolve_hosts(plan.hosts) if plan.hosts else None
    timeout = DEFAULT_TIMEOUT_SECONDS if plan.timeout is None else plan.timeout
    runs = book.owed()
    if not (book.runs and book.runs[0].config.job.device_kind.on_gpu):
        console.print("[yellow]No GPU visible: CPU devices stand in for GPUs (processes or logical devices).[/]")
    rounds = f", {plan.repeat} rounds each" if plan.repeat > 1 else ""
    console.print(f"{len(runs)} runs{rounds} -> {folder.root}")
    interrupted = False  # SIGTERM arrives as KeyboardInterrupt too (`cli.interrupts`, around every verb)
    try:
        bandwidth = bandwidth_report(folder, runs, plan.bandwidth, console)
        with live_compare(console, book.launches_left()) as live:
            run_compare(book, folder, timeout, live.on_result, hosts=hosts, bandwidth=bandwidth, on_event=live.on_event)
    except KeyboardInterrupt:
        interrupted = True

    add_scaling_figures(folder.results)
    results = read_results(folder.results)
    statuses = book.statuses() | {r.status for r in results}
    interrupted = interrupted or "interrupted" in statuses
    if results:
        frame = write_summary(folder.root, results)
        first = results[0].config.job
        layout = "any layout (a transformer)" if first.spec.transformer else first.data_format
        title = f"{first.model} {first.precision} {layout}, {plan.scaling} scaling, {first.device_kind}"
        print_summary(frame, title, summary_format)
        console.print(f"report: {write_report(folder.root)}")
    console.print(f"results: {folder.results}\nsummary: {folder.summary_md}")
    if interrupted:
        console.print(
            f"[yellow]interrupted: finished rows kept; continue with: mgbench compare --resume {folder.root}[/]"
        )
        return INTERRUPTED_EXIT_CODE
    return 1 if statuses & set(FAILED) else 0
