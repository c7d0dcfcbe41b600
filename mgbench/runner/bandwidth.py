"""Measuring `bandwidth.json`: the torch worker under torchrun (the file's schema and the ring
model it feeds live in `mgbench.common.bandwidth`)."""

from __future__ import annotations

import os
from pathlib import Path

from mgbench.frameworks.registry import framework_spec
from mgbench.runner.launch import Outcome, execute, interpreter_for, launch_command

WORKER = ("-m", "mgbench.frameworks.pytorch.bandwidth_worker")


def measure_bandwidth(
    path: Path, devices: int, device_kind: str, sizes: list[int], copy_bytes: int, timeout: float, log_path: Path
) -> Outcome:
    """Run the torch worker under torchrun with `devices` processes; it writes `path` on success."""
    interpreter = interpreter_for(framework_spec("pytorch"))
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
    command = launch_command(interpreter, "torchrun", devices, args, entry=WORKER)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    if device_kind == "cpu":
        env["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // devices))
    path.unlink(missing_ok=True)
    return execute(command, env, timeout, log_path)
