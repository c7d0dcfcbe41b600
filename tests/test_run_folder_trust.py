"""What a run folder holds can be trusted: its files follow the user's umask."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest
from conftest import cli_env, tiny_job

FAKE_JOB = ["--frameworks", "fake", "--gpus", "1", *tiny_job(4)]


@pytest.mark.parametrize("umask, file_mode, folder_mode", [(0o022, 0o644, 0o755), (0o077, 0o600, 0o700)])
def test_every_file_of_a_run_folder_follows_the_umask(tmp_path, umask, file_mode, folder_mode):
    out = tmp_path / "modes"
    done = subprocess.run(
        [sys.executable, "-m", "mgbench", "compare", *FAKE_JOB, "--out", str(out)],
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=600,
        preexec_fn=lambda: os.umask(umask),
    )
    assert done.returncode == 0, done.stderr
    modes = {str(path.relative_to(out)): stat.S_IMODE(path.stat().st_mode) for path in out.rglob("*")}
    assert modes == {name: folder_mode if (out / name).is_dir() else file_mode for name in modes}
    written = {"results.jsonl", "compare.json", "raw/fake-steady-1cpu.json", "summary.csv", "report.html"}
    assert written | {"charts/throughput.png", "configs/fake-steady-1cpu.json"} <= set(modes)
