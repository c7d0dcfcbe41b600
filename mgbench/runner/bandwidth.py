"""Measuring `bandwidth.json`: the torch worker under torchrun (the file's schema and the ring
model it feeds live in `mgbench.records.bandwidth`)."""

from __future__ import annotations

import os
from collections.abc import Callable

from mgbench.core.kinds import DeviceKind
from mgbench.frameworks.registry import framework_spec
from mgbench.records.bandwidth import DEFAULT_COPY_BYTES, DEFAULT_SIZES, BandwidthReport
from mgbench.records.runfolder import RunFolder
from mgbench.runner.launch import Outcome, execute, interpreter_for
from mgbench.runner.launchers import TORCHRUN, Launch
from mgbench.runner.plan import PlannedRun
from mgbench.runner.scratch import run_scratch

WORKER = ("-m", "mgbench.frameworks.pytorch.bandwidth_worker")
BANDWIDTH_LOG = "bandwidth"
"""The measurement's name in the run folder: its log `logs/bandwidth.log`."""
MEASURE_TIMEOUT_SECONDS = 600.0
"""How long a measurement may take (`mgbench bandwidth` unless `--timeout` says otherwise, and
`compare --bandwidth`)."""


def measure_bandwidth(
    folder: RunFolder, devices: int, device_kind: DeviceKind, sizes: list[int], copy_bytes: int, timeout: float
) -> Outcome:
    """Run the torch worker under torchrun with `devices` processes; it writes the folder's
    `bandwidth.json` on success, its output goes to `logs/bandwidth.log` (`RunFolder.log`) and
    its temporary files (torchrun's `torchelastic_*`) to a folder of its own, removed after
    (`runner.scratch`)."""
    interpreter = interpreter_for(framework_spec("pytorch"))
    path = folder.bandwidth
    args = [
        "--out",
        str(path),
        "--sizes",
        ",".join(map(str, sizes)),
        "--copy-bytes",
        str(copy_bytes),
        "--device-kind",
        device_kind,
    ]
    command = TORCHRUN.command(Launch(interpreter, args, entry=WORKER), devices)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    if not device_kind.on_gpu:
        env["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // devices))
    path.unlink(missing_ok=True)
    log = folder.with_folder(folder.log(BANDWIDTH_LOG))
    with run_scratch() as scratch:
        return execute(command, {**env, **scratch}, timeout, log)


def bandwidth_report(
    folder: RunFolder,
    runs: list[PlannedRun],
    measure: bool,
    on_progress: Callable[[str], None],
    on_note: Callable[[str], None],
) -> BandwidthReport | None:
    """The run folder's bandwidth.json: reused when present, measured first when asked for, on
    the most devices `runs` use (two at least)."""
    if not folder.bandwidth.exists() and measure and runs:
        devices = max(run.config.devices for run in runs)
        kind = runs[0].config.job.device_kind
        on_progress(f"measuring bandwidth on {devices} {kind} devices -> {folder.bandwidth}")
        sizes = list(DEFAULT_SIZES)
        measure_bandwidth(folder, max(devices, 2), kind, sizes, DEFAULT_COPY_BYTES, MEASURE_TIMEOUT_SECONDS)
        if not folder.bandwidth.exists():
            on_note(f"bandwidth measurement failed; see {folder.log(BANDWIDTH_LOG)}")
    return BandwidthReport.read(folder.bandwidth) if folder.bandwidth.exists() else None
