"""`mgbench compare`: every named framework and strategy on 1 and on N devices, side by side."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from datetime import datetime
from pathlib import Path

from rich.console import Console

from mgbench.cli.options import add_job_options, base_config, parse_device_counts
from mgbench.common.devices import check_device_counts
from mgbench.common.errors import UsageError
from mgbench.common.orchestrator import RunFolder, plan_runs, run_compare
from mgbench.common.results import RunResult, write_json_atomically
from mgbench.datasets.description import check_dataset
from mgbench.frameworks import framework_spec
from mgbench.reports.html import write_report
from mgbench.reports.summary import print_summary, write_summary

DEFAULT_TIMEOUT_SECONDS = 1200.0
FAILED = ("failed", "timeout", "oom")


def register(verbs: argparse._SubParsersAction) -> None:
    parser = verbs.add_parser("compare", help="run frameworks/strategies on 1 and N devices and compare them")
    parser.add_argument("--frameworks", required=True, help="comma-separated, e.g. pytorch,keras")
    parser.add_argument("--strategies", default=None, help="comma-separated subset (default: every strategy)")
    parser.add_argument("--gpus", default="2", help="N (runs 1 and N) or a list such as 1,2,4 (default 2)")
    parser.add_argument("--scaling", default="weak", choices=("weak", "strong"), help="weak: batch per GPU fixed")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_SECONDS, help="seconds per run")
    parser.add_argument("--out", type=Path, default=None, help="run folder (default runs/<time>-<model>)")
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


def handle(args: argparse.Namespace) -> int:
    frameworks = _split(args.frameworks) or []
    if not frameworks:
        raise UsageError("--frameworks is empty")
    specs = [framework_spec(name) for name in frameworks]
    counts = parse_device_counts(args.gpus)
    base = base_config(args, specs[0].name, specs[0].strategies[0].name, 1)
    check_device_counts(counts, base.device_kind)
    configs = plan_runs(base, frameworks, _split(args.strategies), counts, args.scaling)
    check_dataset(base.dataset, configs)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    folder = prepare_folder(args.out or Path("runs") / f"{stamp}-{base.model}")
    write_json_atomically(
        folder.root / "compare.json",
        json.dumps(
            {"command": shlex.join(["mgbench", *sys.argv[1:]]), "configs": [c.to_dict() for c in configs]}, indent=2
        ),
    )

    console = Console(stderr=True)
    if base.device_kind == "cpu":
        console.print("[yellow]No GPU visible: CPU devices stand in for GPUs (processes or logical devices).[/]")
    console.print(f"{len(configs)} runs -> {folder.root}")

    with console.status(f"running 1/{len(configs)}...") as status:

        def on_result(result: RunResult) -> None:
            done = f"{result.config.framework} {result.config.strategy} x{result.config.devices}"
            if result.status == "ok":
                console.print(f"  [green]ok[/] {done}: {result.images_per_sec:.1f} img/s")
            else:
                first = (result.error or "").splitlines()[0] if result.error else ""
                console.print(f"  [red]{result.status}[/] {done}: {first}")
            finished = configs.index(result.config) + 1
            status.update(f"running {min(finished + 1, len(configs))}/{len(configs)}...")

        results = run_compare(configs, folder, args.timeout, on_result)

    frame = write_summary(folder.root, results)
    title = f"{base.model} {base.precision} {base.data_format}, {args.scaling} scaling, {base.device_kind}"
    print_summary(frame, Console(), title)
    report = write_report(folder.root)
    console.print(f"results: {folder.results}\nsummary: {folder.root / 'summary.md'}\nreport: {report}")
    return 1 if any(r.status in FAILED for r in results) else 0
