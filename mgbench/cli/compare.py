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
from pathlib import Path

from rich.console import Console
from rich.text import Text

from mgbench.cli.closing import closing_lines, exit_status, run_accounts
from mgbench.cli.compare_time import compare_clock
from mgbench.cli.live import heartbeat_seconds, live_compare
from mgbench.cli.options import add_job_options, job_from_args, parse_device_counts
from mgbench.cli.output import note_to
from mgbench.cli.report import add_format_option
from mgbench.cli.values import folder_path, hosts_text, names, positive_seconds, rounds_count
from mgbench.core.errors import UsageError
from mgbench.frameworks.registry import expand_frameworks
from mgbench.records.compare_plan import ComparePlan
from mgbench.records.results import Status, read_results
from mgbench.records.runfolder import RunFolder
from mgbench.reports.compact import print_summary
from mgbench.reports.figures import compare_title
from mgbench.reports.html import write_report
from mgbench.reports.summary import sized_console, write_summary
from mgbench.runner import compare_service
from mgbench.runner.compare_service import NewCompare, Voice
from mgbench.runner.orchestrator import DEFAULT_TIMEOUT_SECONDS
from mgbench.runner.plan import PlannedRun
from mgbench.runner.rounds import CPU_ROUNDS, GPU_ROUNDS, RoundBook
from mgbench.runner.starting_point import shared_start
from mgbench.training.compile_cache import cold_asked

RESUME_OPTIONS = {"resume", "timeout", "repeat", "format"}
"""What `--resume` takes: the recorded plan is run as it was, only its timeout and its number of
rounds may change (`--repeat 5` adds rounds to a compare of 3), and the summary may be printed in
another format (`--format json`), which changes no plan."""


def register(verbs: argparse._SubParsersAction) -> None:
    parser = verbs.add_parser("compare", help="run frameworks/strategies on 1 and N devices and compare them")
    add_arguments(parser)
    parser.set_defaults(handler=handle)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--frameworks",
        type=names,
        default=None,
        help="comma-separated, e.g. pytorch,keras (keras = Keras 3 on every installed backend; required unless --resume)",
    )
    parser.add_argument(
        "--strategies",
        type=names,
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
    parser.add_argument(
        "--cold-cache",
        action="store_true",
        help="every run compiles from empty compile caches of its own (default: runs share mgbench's "
        "compile caches across rounds and compares, and a second compile of a step reads the first's)",
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
        options = ", ".join("--" + name.replace("_", "-") for name in ignored)
        raise UsageError(
            f"--resume runs the plan recorded in {run_dir}, so it takes no {options} (only --timeout, --repeat and --format); "
            "start a new compare for another job"
        )


def typed_command(args: argparse.Namespace) -> str:
    """The command as typed (`args.argv`, from `mgbench.cli.main`), recorded in compare.json."""
    return shlex.join(["mgbench", *args.argv])


def voice(console: Console) -> Voice:
    return Voice(note=note_to(console), progress=console.print)


def plan_new(args: argparse.Namespace, console: Console) -> tuple[RunFolder, ComparePlan, list[PlannedRun]]:
    """The run folder (created, nothing written in it yet), the plan and its runs, as the options ask."""
    expanded = expand_frameworks(args.frameworks or [])
    if not expanded:
        raise UsageError("--frameworks is required (or --resume RUN_DIR)")
    counts = parse_device_counts(args.gpus)
    job, size_note = job_from_args(args)
    asked = NewCompare(
        job,
        size_note,
        expanded,
        args.strategies,
        counts,
        args.scaling,
        typed_command(args),
        args.out,
        args.hosts,
        args.timeout,
        args.bandwidth,
        args.repeat,
        cold_cache=args.cold_cache or cold_asked(),
    )
    return compare_service.plan_compare(asked, voice(console))


def handle(args: argparse.Namespace) -> int:
    console = sized_console(stderr=True, soft_wrap=True)
    heartbeat_seconds()  # a bad MGBENCH_HEARTBEAT_SECONDS is refused before anything is written
    if args.resume:
        refuse_job_options(args.resume, typed_options(args.argv[1:]))
        folder = compare_service.folder_to_resume(args.resume)
    else:
        folder, plan, runs = plan_new(args, console)
        book = RoundBook(runs, plan.repeat)
        start = shared_start(plan.configs[0]) if plan.configs else None  # drawn before a file is written
    with folder.claimed() as lock:
        if lock and lock.taken_over:
            note_to(console)(f"{folder.root}: lock taken over from an mgbench that is gone ({lock.taken_over})")
        if args.resume:
            plan, book = compare_service.plan_resume(
                folder, typed_command(args), args.timeout, args.repeat, voice(console)
            )
        else:
            compare_service.start_new(folder, plan, start)
        hint = f"the rows written are kept; continue with: mgbench compare --resume {folder.root}"
        with folder.writing(hint):
            return run_planned(folder, plan, book, console, args.format)


def run_planned(folder: RunFolder, plan: ComparePlan, book: RoundBook, console: Console, summary_format: str) -> int:
    """The rounds still owed, each recorded as it ends, then the summary and the report, a line
    for each run short of its rounds, and the exit code with its reason (`closing`: 1 where a
    round failed, even one whose run has a row from its other rounds, or nothing was measured)."""
    interrupted = False  # SIGTERM arrives as KeyboardInterrupt too (`cli.interrupts`, around every verb)
    clock = compare_clock(console, book, plan.cold_cache)
    try:
        with live_compare(console, book.launches_left(), clock) as live:
            compare_service.run_rounds(folder, plan, book, voice(console), live.on_result, live.on_event)
    except KeyboardInterrupt:
        interrupted = True
    results = read_results(folder.results)
    interrupted = interrupted or Status.INTERRUPTED in book.statuses()
    if results:
        title = compare_title(results[0].config.job, plan.scaling)
        print_summary(write_summary(folder.root, results), title, summary_format)
        console.print(f"report: {write_report(folder.root)}")
    console.print(f"results: {folder.results}\nsummary: {folder.summary_md}")
    console.print(clock.total_line(), highlight=False)
    accounts = run_accounts(book)
    for line in closing_lines(accounts):
        note_to(console)(line)
    if interrupted:
        note_to(console)(f"interrupted: finished rows kept; continue with: mgbench compare --resume {folder.root}")
    ending = exit_status(accounts, interrupted)
    console.print(Text(ending.text))
    return ending.code
