"""`mgbench compare`: every named framework and strategy on 1 and on N devices, side by side.

Each row lands in `results.jsonl` as its run ends. Ctrl-C or SIGTERM stops the current run,
keeps the finished rows, writes the summary of what exists and exits 130; `--resume RUN_DIR`
then runs only what is not done yet, from the configs recorded in `compare.json`.
"""

from __future__ import annotations

import argparse
import json
import shlex
import signal
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.console import Console

from mgbench.cli.options import add_job_options, base_config, parse_device_counts
from mgbench.common.bandwidth import DEFAULT_COPY_BYTES, DEFAULT_SIZES, BandwidthReport
from mgbench.runner.bandwidth import measure_bandwidth
from mgbench.common.config import DeviceKind, RunConfig
from mgbench.common.devices import check_device_counts
from mgbench.common.errors import UsageError
from mgbench.runner.hosts import Host, resolve_hosts
from mgbench.common.runfolder import RunFolder
from mgbench.runner.orchestrator import pending_runs, plan_runs, run_compare
from mgbench.common.results import RunResult, read_results, write_json_atomically, write_results
from mgbench.datasets.resolve import check_dataset
from mgbench.frameworks.registry import framework_spec
from mgbench.reports.html import write_report
from mgbench.reports.summary import print_summary, write_summary

DEFAULT_TIMEOUT_SECONDS = 1200.0
FAILED = ("failed", "timeout", "oom")
INTERRUPTED_EXIT_CODE = 130


def register(verbs: argparse._SubParsersAction) -> None:
    parser = verbs.add_parser("compare", help="run frameworks/strategies on 1 and N devices and compare them")
    parser.add_argument("--frameworks", default=None, help="comma-separated, e.g. pytorch,keras (required unless --resume)")
    parser.add_argument("--strategies", default=None, help="comma-separated subset (default: every strategy)")
    parser.add_argument("--gpus", default="2", help="N (runs 1 and N) or a list such as 1,2,4 (default 2)")
    parser.add_argument("--scaling", default="weak", choices=("weak", "strong"), help="weak: batch per GPU fixed")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_SECONDS, help="seconds per run")
    parser.add_argument("--out", type=Path, default=None, help="run folder (default runs/<time>-<model>)")
    parser.add_argument("--resume", type=Path, default=None, metavar="RUN_DIR", help="rerun what is not done in RUN_DIR")
    parser.add_argument(
        "--hosts",
        default=None,
        help="host1:4,host2:4 or 'slurm': the run on all their slots spans the hosts (torchrun, horovodrun, TF_CONFIG)",
    )
    parser.add_argument(
        "--bandwidth", action="store_true", help="measure bandwidth.json first (reused if present) for all-reduce shares"
    )
    add_job_options(parser)
    parser.set_defaults(handler=handle)


def _split(text: str | None) -> list[str] | None:
    return None if text is None else [part.strip() for part in text.split(",") if part.strip()]


def prepare_folder(path: Path) -> RunFolder:
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as error:
        raise UsageError(f"cannot write to run folder {path}: {error.strerror}") from None
    return RunFolder(path)


def check_host_counts(counts: list[int], hosts: list[Host], kind: DeviceKind) -> None:
    """With hosts, a count is either all their slots (spans them) or fits on this machine."""
    total = sum(host.slots for host in hosts)
    for count in counts:
        if count != total and count > hosts[0].slots:
            raise UsageError(f"--gpus {count} with --hosts: use at most {hosts[0].slots} (one host) or {total} (all)")
    check_device_counts([c for c in counts if c != total], kind)


def plan_new(args: argparse.Namespace) -> tuple[RunFolder, list[RunConfig], dict[str, Any]]:
    frameworks = _split(args.frameworks) or []
    if not frameworks:
        raise UsageError("--frameworks is required (or --resume RUN_DIR)")
    specs = [framework_spec(name) for name in frameworks]
    counts = parse_device_counts(args.gpus)
    base = base_config(args, specs[0].name, specs[0].strategies[0].name, 1)
    hosts = resolve_hosts(args.hosts) if args.hosts else None
    if hosts:
        check_host_counts(counts, hosts, base.device_kind)
    else:
        check_device_counts(counts, base.device_kind)
    configs = plan_runs(base, frameworks, _split(args.strategies), counts, args.scaling)
    check_dataset(base.dataset, configs)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    folder = prepare_folder(args.out or Path("runs") / f"{stamp}-{base.model}")
    options = {"timeout": args.timeout, "hosts": args.hosts, "bandwidth": args.bandwidth, "scaling": args.scaling}
    record = {"command": shlex.join(["mgbench", *sys.argv[1:]]), "options": options, "configs": [c.to_dict() for c in configs]}
    write_json_atomically(folder.compare_file, json.dumps(record, indent=2))
    return folder, configs, options


def plan_resume(run_dir: Path) -> tuple[RunFolder, list[RunConfig], dict[str, Any]]:
    """The recorded plan of RUN_DIR; its results file keeps only the rows of runs already done."""
    folder = RunFolder(run_dir)
    if not folder.compare_file.exists():
        raise UsageError(f"--resume: {folder.compare_file} not found (not a compare run folder)")
    prepare_folder(run_dir)
    record = json.loads(folder.compare_file.read_text())
    configs = [RunConfig.from_dict(config) for config in record["configs"]]
    kept, todo = pending_runs(configs, read_results(folder.results))
    write_results(folder.results, kept)
    record.setdefault("resumed", []).append(shlex.join(["mgbench", *sys.argv[1:]]))
    write_json_atomically(folder.compare_file, json.dumps(record, indent=2))
    return folder, todo, record.get("options", {})


def bandwidth_report(folder: RunFolder, configs: list[RunConfig], measure: bool, console: Console) -> BandwidthReport | None:
    """The run folder's bandwidth.json: reused when present, measured first when asked for."""
    if not folder.bandwidth.exists() and measure and configs:
        devices = max(config.devices for config in configs)
        kind = configs[0].device_kind
        console.print(f"measuring bandwidth on {devices} {kind} devices -> {folder.bandwidth}")
        sizes = list(DEFAULT_SIZES)
        measure_bandwidth(folder.bandwidth, max(devices, 2), kind, sizes, DEFAULT_COPY_BYTES, 600.0, folder.log("bandwidth"))
        if not folder.bandwidth.exists():
            console.print(f"[yellow]bandwidth measurement failed; see {folder.log('bandwidth')}[/]")
    return BandwidthReport.read(folder.bandwidth) if folder.bandwidth.exists() else None


def handle(args: argparse.Namespace) -> int:
    if args.resume:
        folder, configs, options = plan_resume(args.resume)
    else:
        folder, configs, options = plan_new(args)
    hosts = resolve_hosts(options["hosts"]) if options.get("hosts") else None
    timeout = float(options.get("timeout", args.timeout))

    console = Console(stderr=True)
    kind = configs[0].device_kind if configs else "cpu"
    if kind == "cpu":
        console.print("[yellow]No GPU visible: CPU devices stand in for GPUs (processes or logical devices).[/]")
    console.print(f"{len(configs)} runs -> {folder.root}")
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    interrupted = False
    try:
        bandwidth = bandwidth_report(folder, configs, bool(options.get("bandwidth")), console)
        with console.status(f"running 1/{len(configs)}...") as status:

            def on_result(result: RunResult) -> None:
                done = f"{result.config.framework} {result.config.strategy} x{result.config.devices}"
                if result.status == "ok":
                    console.print(f"  [green]ok[/] {done}: {result.images_per_sec:.1f} img/s")
                else:
                    first = (result.error or "").splitlines()[0] if result.error else ""
                    console.print(f"  [red]{result.status}[/] {done}: {first}")
                finished = [c.run_id for c in configs].index(result.run_id) + 1
                status.update(f"running {min(finished + 1, len(configs))}/{len(configs)}...")

            run_compare(configs, folder, timeout, on_result, hosts=hosts, bandwidth=bandwidth)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        signal.signal(signal.SIGTERM, previous)

    results = read_results(folder.results)
    interrupted = interrupted or any(r.status == "interrupted" for r in results)
    if results:
        frame = write_summary(folder.root, results)
        first = results[0].config
        title = f"{first.model} {first.precision} {first.data_format}, {options.get('scaling', 'weak')} scaling, {first.device_kind}"
        print_summary(frame, title)
        console.print(f"report: {write_report(folder.root)}")
    console.print(f"results: {folder.results}\nsummary: {folder.root / 'summary.md'}")
    if interrupted:
        console.print(f"[yellow]interrupted: finished rows kept; continue with: mgbench compare --resume {folder.root}[/]")
        return INTERRUPTED_EXIT_CODE
    return 1 if any(r.status in FAILED for r in results) else 0
