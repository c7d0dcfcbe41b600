"""What a compare shows while it runs: plain start/end/heartbeat lines in a pipe, bars on a terminal."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios

import pytest
from conftest import cli_env, mgbench, tiny_job

from mgbench.cli import main
from mgbench.cli.live import HEARTBEAT_ENV

JOB = ["--frameworks", "fake", "--strategies", "steady,slow", "--gpus", "1", *tiny_job(3, batch=2, device="cpu")]
"""Two runs on one CPU device: `steady` ends in a second, `slow` takes a second per step."""


def test_a_piped_compare_prints_a_start_and_an_end_line_per_run_and_heartbeats(tmp_path):
    out = tmp_path / "run"
    done = mgbench("compare", *JOB, "--out", str(out), **{HEARTBEAT_ENV: "0.5"})
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    for position, strategy in ((1, "steady"), (2, "slow")):
        start = f"[{position}/2] start fake {strategy} x1 (log: {out / 'logs' / f'fake-{strategy}-1cpu.log'})"
        assert start in lines, done.stderr
        end = [line for line in lines if line.startswith(f"[{position}/2] ok fake {strategy} x1: ")]
        assert len(end) == 1 and re.search(r": [\d.]+ img/s, [\d.]+ s$", end[0]), done.stderr
        assert lines.index(start) < lines.index(end[0])
    beats = [line for line in lines if line.startswith("[2/2] running fake slow x1: ")]
    assert len(beats) >= 2, done.stderr
    assert any(re.search(r"step \d/3, [\d.]+ img/s$", beat) for beat in beats), done.stderr


def test_a_compare_on_a_terminal_draws_the_overall_and_the_step_bars(tmp_path):
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 120, 0, 0))
    env = cli_env(TERM="xterm-256color")
    env.pop("NO_COLOR", None)
    compare = subprocess.Popen(
        [sys.executable, "-m", "mgbench", "compare", *JOB, "--out", str(tmp_path / "run")],
        stdin=subprocess.DEVNULL,
        stdout=terminal,
        stderr=terminal,
        env=env,
    )
    os.close(terminal)
    screen = b""
    while True:
        try:
            chunk = os.read(controller, 65536)
        except OSError:
            break
        if not chunk:
            break
        screen += chunk
    assert compare.wait(timeout=120) == 0
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen.decode(errors="replace"))
    assert re.search(r"runs\s+[━╸╺]+ 1/2", text), text[-3000:]
    assert re.search(r"fake slow x1\s.*\d/3.*[\d.]+ img/s", text), text[-3000:]
    assert "ok fake slow x1: " in text


def test_an_out_of_memory_restart_is_announced_when_it_happens(tmp_path):
    job = ["--frameworks", "fake", "--strategies", "oom-above", "--gpus", "1", *tiny_job(2, batch=8, device="cpu")]
    done = mgbench("compare", *job, "--out", str(tmp_path / "run"))
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    restart = lines.index("[1/1] out of memory: fake oom-above x1 restarts with 4 per device")
    assert restart < next(i for i, line in enumerate(lines) if line.startswith("[1/1] ok fake oom-above x1: "))


@pytest.mark.parametrize("value", ["abc", "0", "-1", "nan"])
def test_a_heartbeat_that_is_no_positive_number_of_seconds_is_one_line_before_anything_is_written(
    tmp_path, monkeypatch, capsys, fake_plugin, value
):
    """`abc` would end the progress thread in a traceback; `0`, `-1`, `nan` print a line per turn."""
    monkeypatch.setenv(HEARTBEAT_ENV, value)
    assert main(["compare", *JOB, "--out", str(tmp_path / "run")]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"mgbench: error: {HEARTBEAT_ENV}: takes ") and line.endswith(f"got {value!r}")
    assert list(tmp_path.iterdir()) == []
