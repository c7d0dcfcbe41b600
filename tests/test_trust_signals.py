"""Nothing waits on a FIFO, the image check leaves no worker behind however
mgbench ends, and Ctrl-C or SIGTERM at any point is one line and exit code 130."""

from __future__ import annotations

import io
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from conftest import cli_env, interruptible, mgbench, one_line_error, tiny_job, wait_for
from PIL import Image
from test_datasets import nih_rows, write_nih

from mgbench.cli.interrupts import sigterm_interrupts
from mgbench.core.errors import UsageError
from mgbench.datasets import check
from mgbench.datasets.parallel import map_with_progress
from mgbench.records.folder_lock import FolderLock

FAKE_COMPARE = ["compare", "--frameworks", "fake", "--gpus", "1", *tiny_job(2)]
INTERRUPTED = "mgbench: interrupted"


def alive(processes: list[psutil.Process]) -> list[psutil.Process]:
    """Those still running (a zombie is not: its parent has only to reap it)."""
    running = []
    for process in processes:
        try:
            if process.status() != psutil.STATUS_ZOMBIE:
                running.append(process)
        except psutil.NoSuchProcess:
            pass
    return running


def start(args: list[str], **env: str) -> subprocess.Popen:
    """`mgbench ARGS` in the background, Ctrl-C reaching it as in a terminal."""
    command = [sys.executable, "-m", "mgbench", *args]
    return subprocess.Popen(command, env=cli_env(**env), stderr=subprocess.PIPE, text=True, preexec_fn=interruptible)


def children_once_started(process: subprocess.Popen, count: int) -> list[psutil.Process]:
    """The process's descendants once there are `count` of them (it is still running)."""
    parent = psutil.Process(process.pid)
    assert wait_for(lambda: len(parent.children(recursive=True)) >= count or process.poll() is not None, 60)
    assert process.poll() is None, process.communicate()[1]
    return parent.children(recursive=True)


def stop(process: subprocess.Popen, sig: int, children: list[psutil.Process]) -> str:
    """Send `sig`, wait for the process; its stderr, once none of `children` is left (SIGKILLed
    to end the test where the check fails)."""
    process.send_signal(sig)
    try:
        _, stderr = process.communicate(timeout=30)
        assert wait_for(lambda: not alive(children), 10), f"left running: {alive(children)}"
    finally:
        for child in alive(children):
            child.kill()
    return stderr


# A FIFO never holds anything.


def test_a_lock_file_that_is_a_fifo_is_refused_not_waited_on(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / "compare.lock")
    (out / "compare.json").write_text("{}")
    refused = one_line_error(mgbench("compare", "--resume", str(out), timeout=60))
    assert "compare.lock is a FIFO, not a regular file" in refused
    lock = FolderLock(out / "compare.lock")
    with check.time_limit(20):  # a new compare checks the folder, then claims it
        for claim in (lock.refuse_if_held, lock.__enter__):
            with pytest.raises(UsageError, match="is a FIFO, not a regular file"):
                claim()


def test_a_lock_file_that_is_a_link_is_refused_and_its_target_left_alone(tmp_path):
    outside = tmp_path / "outside"
    (tmp_path / "compare.lock").symlink_to(outside)
    lock = FolderLock(tmp_path / "compare.lock")
    with pytest.raises(UsageError, match="is a link, not a regular file"):
        lock.__enter__()
    assert not outside.exists()
    outside.write_text("")
    with pytest.raises(UsageError, match="is a link, not a regular file"):
        lock.refuse_if_held()


def dataset_with_odd_files(root: Path) -> dict[str, str]:
    """A ChestX-ray14 folder of 12 images, three of them not files: name -> what it is."""
    rows = nih_rows(12)
    write_nih(root, rows)
    odd = {rows[0][0]: "a FIFO", rows[1][0]: "a socket", rows[2][0]: "a device"}
    for name in odd:
        (root / "images" / name).unlink()
    os.mkfifo(root / "images" / rows[0][0])
    socket.socket(socket.AF_UNIX).bind(str(root / "images" / rows[1][0]))
    (root / "images" / rows[2][0]).symlink_to("/dev/null")
    return odd


def test_fifos_sockets_and_devices_in_a_dataset_are_bad_files_never_opened(tmp_path):
    odd = dataset_with_odd_files(tmp_path)
    refused = one_line_error(
        mgbench(*FAKE_COMPARE, "--dataset", f"chestxray:{tmp_path}", "--out", str(tmp_path / "out"), timeout=60)
    )
    assert "3 of 12 images cannot be decoded" in refused
    assert all(f"images/{name} ({kind}, not a regular file)" in refused for name, kind in odd.items())
    with check.time_limit(20):
        reasons = {name: check.check_file(str(tmp_path / "images" / name)) for name in odd}
    assert reasons == {name: (f"{kind}, not a regular file", False, False) for name, kind in odd.items()}


def test_a_file_that_does_not_come_is_named_once_its_time_is_up(tmp_path, monkeypatch):
    path = tmp_path / "stalled.png"
    Image.new("L", (8, 8)).save(path)
    monkeypatch.setattr(check, "FILE_SECONDS", 0.2)
    monkeypatch.setattr(check.Image, "open", lambda handle: time.sleep(30))
    began = time.monotonic()
    reason = check.check_file(str(path)).reason
    assert time.monotonic() - began < 5
    assert reason == "TimeoutError: not read within 0.2 s"


# The image check's workers end with mgbench, and so does every phase before the runs.


def stop_signals_here(_job: int) -> tuple[bool, bool]:
    """In a worker: whether SIGTERM ends it (its default) and whether Ctrl-C or SIGTERM is blocked."""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    return signal.getsignal(signal.SIGTERM) == signal.SIG_DFL, bool(blocked & {signal.SIGINT, signal.SIGTERM})


def test_a_worker_dies_of_sigterm_where_its_parent_raises_it_as_ctrl_c():
    """The parent's handler, which a forked worker inherits, would have a terminated worker raise
    KeyboardInterrupt and go on with the next job, or run the parent's code."""
    with sigterm_interrupts():
        states = map_with_progress(stop_signals_here, [(job,) for job in range(4)], workers=2)
    assert states == [(True, False)] * 4
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def slow_jpeg(path: Path, side: int = 8000) -> None:
    """A JPEG of `side` x `side` pixels that takes a second or so to decode and no room on disk:
    PIL's header with standard Huffman tables, then a hole (zero bytes) as its scan, which those
    tables read as blocks of 63 small coefficients each, so every block is decoded in full."""
    encoded = io.BytesIO()
    Image.new("L", (side, side), 128).save(encoded, "JPEG")
    data = encoded.getvalue()
    scan = data.index(b"\xff\xda")
    header = data[: scan + 2 + int.from_bytes(data[scan + 2 : scan + 4], "big")]
    bits_per_block = 2 + 63 * 3  # DC "00"; AC "00" (run 0, size 1) plus its one extra bit, 63 times
    with path.open("wb") as handle:
        handle.write(header)
        handle.seek(len(header) + (side // 8) ** 2 * bits_per_block // 8 + 1)
        handle.write(b"\xff\xd9")


def slow_dataset(root: Path) -> Path:
    """A ChestX-ray14 folder whose check keeps every core busy for seconds (six slow JPEGs each)."""
    rows = nih_rows(6 * (os.cpu_count() or 1))
    write_nih(root, rows)
    for name, _, _ in rows:
        (root / "images" / name).unlink()
        slow_jpeg(root / "images" / name.replace(".png", ".jpg"))
    return root


def check_command(verb: str, src: Path, out: Path) -> tuple[list[str], int]:
    """The verb's command line checking `src`, and how many workers its check starts."""
    if verb == "prepare":
        return ["prepare", "chestxray", str(src), str(out), "--workers", "2"], 2
    return [*FAKE_COMPARE, "--dataset", f"chestxray:{src}", "--out", str(out)], os.cpu_count() or 1


@pytest.mark.slow
@pytest.mark.parametrize(
    "verb, sig",
    [
        ("compare", signal.SIGKILL),
        ("compare", signal.SIGTERM),
        ("compare", signal.SIGINT),
        ("prepare", signal.SIGKILL),
        ("prepare", signal.SIGTERM),
    ],
)
def test_ending_mgbench_during_the_image_check_ends_its_workers(tmp_path, verb, sig):
    args, workers = check_command(verb, slow_dataset(tmp_path / "src"), tmp_path / "out")
    process = start(args)
    stderr = stop(process, sig, children_once_started(process, workers))
    if sig == signal.SIGKILL:
        return
    assert process.returncode == 130, stderr
    (line,) = stderr.strip().splitlines()
    assert line.startswith(INTERRUPTED)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_sigterm_during_the_installation_probes_is_one_line(tmp_path, sig):
    """The fake framework's interpreter (MGBENCH_VENVS) is one whose probe never answers."""
    interpreter = tmp_path / "venvs" / "fake" / "bin" / "python"
    interpreter.parent.mkdir(parents=True)
    interpreter.write_text("#!/bin/sh\nexec sleep 60\n")
    interpreter.chmod(0o755)
    process = start([*FAKE_COMPARE, "--out", str(tmp_path / "out")], MGBENCH_VENVS=str(tmp_path / "venvs"))
    stderr = stop(process, sig, children_once_started(process, 1))
    assert process.returncode == 130 and stderr.strip().splitlines() == [INTERRUPTED], stderr
    assert not (tmp_path / "out").exists()
