"""Measuring `bandwidth.json`: the torch worker under torchrun (the file's schema and the ring
model it feeds live in `mgbench.records.bandwidth`)."""

from __future__ import annotations

import os

from mgbench.core.kinds import DeviceKind
from mgbench.frameworks.registry import framework_spec
from mgbench.records.runfolder import RunFolder
from mgbench.runner.launch import Outcome, execute, interpreter_for
from mgbench.runner.launchers import TORCHRUN
from mgbench.runner.scratch import run_scratch

WORKER = ("-m", "mgbench.frameworks.pytorch.bandwidth_worker")
BANDWIDTH_LOG = "bandwidth"
"""The measurement's name in the run folder: its log `logs/bandwidth.log`."""


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
    command = TORCHRUN.command(interpreter, devices, args, entry=WORKER)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    if not device_kind.on_gpu:
        env["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // devices))
    path.unlink(missing_ok=True)
    log = folder.with_folder(folder.log(BANDWIDTH_LOG))
    with run_scratch() as scratch:
        return execute(command, {**env, **scratch}, timeout, log)
