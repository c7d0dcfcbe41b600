"""Nothing mgbench writes in a folder it did not just create goes
through a link planted there (a symbolic link, a hard link to an outside file, a FIFO), a full
disk leaves the old file whole, and temporary files stay inside the run folder.

`safe_files` itself first, then each writer of a run folder: the compare's write probe, the
bandwidth log, what `report` and `--resume` rewrite, and each run's TMPDIR."""

from __future__ import annotations

import errno
import json
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from conftest import cli_env, one_line_error
from test_run_folder_trust import FAKE_JOB, cli, compared, shared_copy  # noqa: F401 (fixtures)

from mgbench.cli import main
from mgbench.core.config import RunConfig
from mgbench.core.errors import UsageError
from mgbench.core.safe_files import LinkRefusedError, fresh_stream, new_file_by_writer, write_file
from mgbench.datasets.output import writing_into
from mgbench.reports.charts import ChartSet
from mgbench.runner.compare_service import prepare_folder
from mgbench.runner.scratch import SCRATCH_ENV, remove_scratch, run_scratch
from mgbench.training.driver import run_training

OUTSIDE = "outside, not mgbench's"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A file outside every folder mgbench writes, that no test may change."""
    path = tmp_path / "elsewhere" / "victim"
    path.parent.mkdir()
    path.write_text(OUTSIDE)
    return path


def plant(kind: str, name: Path, outside: Path) -> None:
    """`name` made a symbolic link or a hard link to `outside`, or a FIFO."""
    name.parent.mkdir(parents=True, exist_ok=True)
    name.unlink(missing_ok=True)
    if kind == "symlink":
        name.symlink_to(outside)
    elif kind == "hardlink":
        os.link(outside, name)
    else:
        os.mkfifo(name)


def leftovers(folder: Path) -> list[str]:
    return [path.name for path in folder.rglob("*") if path.name.endswith(".partial")]


@pytest.mark.parametrize("kind", ["symlink", "hardlink", "fifo"])
def test_a_whole_file_replaces_what_was_planted_at_its_name(tmp_path, outside, kind):
    root = tmp_path / "run"
    plant(kind, root / "sub" / "report.html", outside)
    assert write_file(root, "sub/report.html", "mine") == root / "sub" / "report.html"
    assert (root / "sub" / "report.html").read_text() == "mine" and not (root / "sub" / "report.html").is_symlink()
    assert outside.read_text() == OUTSIDE and leftovers(root) == []


@pytest.mark.parametrize("kind", ["symlink", "hardlink", "fifo"])
def test_a_stream_is_made_anew_not_written_through_what_was_planted(tmp_path, outside, kind):
    root = tmp_path / "run"
    plant(kind, root / "logs" / "run.log", outside)
    with fresh_stream(root, "logs/run.log") as log:
        log.write("mine")
    assert (root / "logs" / "run.log").read_text() == "mine" and outside.read_text() == OUTSIDE
    (root / "logs" / "run.log").unlink()
    (root / "logs" / "run.log").mkdir()
    with pytest.raises(IsADirectoryError, match="a folder is in the way"), fresh_stream(root, "logs/run.log"):
        pass


def stream(root: Path, relative: str, text: str) -> None:
    with fresh_stream(root, relative) as handle:
        handle.write(text)


@pytest.mark.parametrize("write", [write_file, stream])
def test_a_linked_sub_folder_is_refused_writing_nothing(tmp_path, outside, write):
    """Refused as a LinkRefusedError naming the link, which a caller tells from other OSErrors."""
    root = tmp_path / "run"
    root.mkdir()
    (root / "charts").symlink_to(outside.parent)
    with pytest.raises(LinkRefusedError, match="a link or not a folder") as raised:
        write(root, "charts/a.png", "x")
    assert raised.value.filename == str(root / "charts")
    assert [path.name for path in outside.parent.iterdir()] == ["victim"]


def test_a_link_met_while_a_dataset_is_written_is_one_line_naming_it(tmp_path, outside):
    """`prepare` and `make-sample-chestxray` write their files under `writing_into`: a link met on
    the way is named, not a bare "cannot write" that `--overwrite` would not fix."""
    dst = tmp_path / "dst"
    dst.mkdir()
    (dst / "images").symlink_to(outside.parent)
    with pytest.raises(UsageError) as raised, writing_into(dst):
        write_file(dst, "images/labels.csv", "x")
    assert str(raised.value) == f"{dst / 'images'} is a link or not a folder; mgbench follows no link inside {dst}"
    assert [path.name for path in outside.parent.iterdir()] == ["victim"]


def test_a_full_disk_leaves_the_old_file_whole_and_no_partial_file(tmp_path, monkeypatch):
    root = tmp_path / "run"
    root.mkdir()
    (root / "results.jsonl").write_text("old\n")

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError, match="No space left on device") as raised:
        write_file(root, "results.jsonl", "new\n" * 1000)
    assert raised.value.filename == str(root / "results.jsonl")
    assert (root / "results.jsonl").read_text() == "old\n" and leftovers(root) == []


@pytest.mark.parametrize("taken", ["file", "symlink"])
def test_a_new_file_is_not_written_over_a_name_taken_meanwhile(tmp_path, outside, taken):
    """`exclusive` and `new_file_by_writer` link the whole new file to its name: one that appeared
    while it was written (a second conversion, a planted link) stays as it is, and no temporary
    file is left."""
    folder = tmp_path / "out"
    folder.mkdir()
    name = folder / "w.npz"

    def take() -> None:
        name.unlink(missing_ok=True)
        name.symlink_to(outside) if taken == "symlink" else name.write_text("the other writer's")

    with pytest.raises(FileExistsError), new_file_by_writer(name) as temporary:
        np.savez(temporary, a=np.zeros(2))
        take()
    taken_text = name.read_text()
    take()
    with pytest.raises(FileExistsError):
        write_file(folder, "w.npz", "mine", exclusive=True)
    assert name.read_text() == taken_text == (OUTSIDE if taken == "symlink" else "the other writer's")
    assert outside.read_text() == OUTSIDE and [path.name for path in folder.iterdir()] == ["w.npz"]
    name.unlink()
    with new_file_by_writer(name) as temporary:
        np.savez(temporary, a=np.ones(2))
    assert np.load(name)["a"].tolist() == [1.0, 1.0] and [path.name for path in folder.iterdir()] == ["w.npz"]


@pytest.mark.parametrize("verb", ["run", "convert-weights"])
@pytest.mark.parametrize(
    "make, name, message",
    [
        (
            lambda path, outside: path.symlink_to(outside),
            "w.npz",
            "w.npz exists: give a new name (it is not overwritten)",
        ),
        (lambda path, outside: path.write_text("mine"), "w.npz", "w.npz exists: give a new name"),
        (lambda path, outside: os.mkfifo(path), "w.npz", "w.npz exists: give a new name"),
        (lambda path, outside: None, "no-folder/w.npz", "no file can be made there (No such file or directory)"),
        (lambda path, outside: path.parent.write_text("a file"), "file/w.npz", "no file can be made there (Not a dir"),
        (lambda path, outside: None, "/proc/mgbench-w.npz", "/proc/mgbench-w.npz: no file can be made there ("),
        (lambda path, outside: None, "w.txt", "w.txt: the weights are written as .npz (what --init reads)"),
    ],
    ids=["symlink", "existing", "fifo", "missing-folder", "under-a-file", "proc", "suffix"],
)
def test_weights_to_write_go_to_a_new_npz_in_a_folder_checked_before_anything_runs(
    tmp_path, outside, capsys, fake_plugin, verb, make, name, message
):
    """`run --save-state` and `convert-weights`' DST: what their end would overwrite, write
    through, wait on or fail to make is one line before the run or the conversion starts."""
    path = tmp_path / name
    make(path, outside)
    before = sorted(tmp_path.rglob("*"))
    if verb == "run":
        args = ["run", "--framework", "fake", "--steps", "1", "--save-state", str(path), "--out", str(tmp_path / "r")]
    else:
        args = ["convert-weights", str(tmp_path / "src.pth"), str(path), "--model", "tiny"]
    with pytest.raises(SystemExit) as stopped:
        main(args)
    line = one_line_error(subprocess.CompletedProcess(args, stopped.value.code, "", capsys.readouterr().err))
    assert message in line
    assert sorted(tmp_path.rglob("*")) == before and outside.read_text() == OUTSIDE


def test_a_killed_compares_watchdog_removes_the_runs_temporary_folder(tmp_path):
    """mgbench SIGKILLed: its end of the watchdog's pipe closes, and the watchdog, having killed
    the run's processes, removes the run's TMPDIR, which mgbench can no longer remove itself."""
    with run_scratch() as scratch:
        folder = Path(scratch["TMPDIR"])
        (folder / "torchelastic_left").mkdir()
        watchdog = subprocess.run(
            [sys.executable, "-m", "mgbench.runner.watchdog"],
            input=b"",  # the pipe closes without `done`: mgbench is gone
            env={**cli_env(), **scratch},
            timeout=60,
        )
        assert watchdog.returncode == 0 and not folder.exists()


def test_a_watchdog_told_done_leaves_the_temporary_folder_to_mgbench(tmp_path):
    with run_scratch() as scratch:
        folder = Path(scratch["TMPDIR"])
        subprocess.run(
            [sys.executable, "-m", "mgbench.runner.watchdog"], input=b"done\n", env={**cli_env(), **scratch}, timeout=60
        )
        assert folder.is_dir()
    assert not folder.exists()


def test_a_scratch_variable_set_by_hand_removes_nothing(tmp_path):
    kept = tmp_path / "not-mgbench-run"
    kept.mkdir()
    remove_scratch({SCRATCH_ENV: str(kept)})
    assert kept.is_dir()


def test_the_compare_write_probe_is_not_written_through_a_planted_link(tmp_path, outside):
    """`compare --resume DIR` with `DIR/.write-test` linked to an outside file."""
    run = tmp_path / "run"
    run.mkdir()
    (run / ".write-test").symlink_to(outside)
    prepare_folder(run, new=False)
    assert outside.read_text() == OUTSIDE and list(run.iterdir()) == []


@pytest.fixture
def fake_measure(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`bandwidth` launches, instead of torchrun under torch's interpreter, a command that leaves
    a folder in its temporary folder, as torchrun leaves `torchelastic_*`, and prints its path."""
    python = tmp_path / "python"
    python.write_text('#!/bin/sh\necho "TMPDIR $(mktemp -d -t torchelastic_XXXX)"\n')
    python.chmod(0o755)
    monkeypatch.setattr("mgbench.runner.bandwidth.interpreter_for", lambda spec: str(python))


def test_bandwidth_refuses_a_log_folder_linked_out_of_its_folder(tmp_path, outside, fake_measure, capsys):
    """`bandwidth --out DIR` with `DIR/logs` a link to an outside folder."""
    out = tmp_path / "bw"
    out.mkdir()
    (out / "logs").symlink_to(outside.parent)
    code = main(["bandwidth", "--device", "cpu", "--gpus", "2", "--out", str(out)])
    err = capsys.readouterr().err
    line = one_line_error(subprocess.CompletedProcess([], code, "", err))
    assert "leads outside the run folder" in line
    assert [path.name for path in outside.parent.iterdir()] == ["victim"]


def test_bandwidth_keeps_its_temporary_files_in_a_folder_of_its_own(tmp_path, fake_measure, capsys):
    """Torchrun's `torchelastic_*` go in the measurement's own temporary folder, removed after."""
    out = tmp_path / "bw"
    assert main(["bandwidth", "--device", "cpu", "--gpus", "2", "--out", str(out)]) == 1  # no bandwidth.json
    capsys.readouterr()
    log = (out / "logs" / "bandwidth.log").read_text()
    temporary = Path(next(line for line in log.splitlines() if line.startswith("TMPDIR ")).split(" ", 1)[1])
    assert temporary.parent.name.startswith("mgbench-run-") and not temporary.parent.exists()
    assert sorted(path.name for path in out.iterdir()) == ["logs"]


def hard_linked(run: Path, names: list[str], outside: Path) -> dict[str, Path]:
    """Each name of the folder replaced by a hard link to its own outside file."""
    victims = {}
    for name in names:
        victims[name] = outside.parent / name.replace("/", "-")
        victims[name].write_text(OUTSIDE)
        plant("hardlink", run / name, victims[name])
    return victims


def test_report_replaces_hard_links_instead_of_writing_through_them(compared, tmp_path, outside, cli):  # noqa: F811
    """`report` rewrites report.html and charts/ by new files renamed over the names."""
    run = shared_copy(compared, tmp_path)
    victims = hard_linked(run, ["report.html", "charts/throughput.png", "charts/steps-fake-steady-1cpu.png"], outside)
    assert cli("report", str(run)).returncode == 0
    assert {name: path.read_text() for name, path in victims.items()} == dict.fromkeys(victims, OUTSIDE)
    assert (run / "report.html").read_text().startswith("<!DOCTYPE html>")
    assert (run / "charts" / "throughput.png").read_bytes().startswith(b"\x89PNG")


def test_resume_replaces_hard_links_instead_of_writing_through_them(compared, tmp_path, outside, cli, in_process):  # noqa: F811
    """`--resume` rewrites the rerun's config, log and trace, the summaries and the report."""
    run = shared_copy(compared, tmp_path)
    rerun = "fake-flaky-1cpu"
    names = [f"configs/{rerun}.json", f"logs/{rerun}.log", f"traces/{rerun}.csv", "summary.md", "summary.csv"]
    victims = hard_linked(run, [*names, "report.html"], outside)
    assert cli("compare", "--resume", str(run)).returncode == 0
    assert {name: path.read_text() for name, path in victims.items()} == dict.fromkeys(victims, OUTSIDE)
    assert json.loads((run / "configs" / f"{rerun}.json").read_text())["strategy"] == "flaky"
    assert (run / "traces" / f"{rerun}.csv").read_text().startswith("seconds,kind")


@pytest.fixture
def file_size_limit() -> Iterator[Callable[[int], None]]:
    """`limit(bytes)`: this process's writes past `bytes` into a file fail (EFBIG), as on a full
    disk, until the test ends (SIGXFSZ, which would kill the process, ignored meanwhile)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    yield lambda size: resource.setrlimit(resource.RLIMIT_FSIZE, (size, hard))
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    signal.signal(signal.SIGXFSZ, handler)


def test_a_full_disk_while_the_report_is_written_leaves_the_old_one_whole(
    compared,  # noqa: F811
    tmp_path,
    cli,  # noqa: F811
    monkeypatch,
    file_size_limit,
):
    """The report is written beside and renamed over; a write that fails leaves no
    truncated `report.html` and no partial file (the charts, drawn before it, left out here, and
    the new report as long as the old one)."""
    run = shared_copy(compared, tmp_path)
    before = (run / "report.html").read_bytes()
    monkeypatch.setattr("mgbench.reports.html.write_charts", lambda data, folder: ChartSet())
    monkeypatch.setattr("mgbench.reports.html.render_report", lambda data, charts: "n" * len(before))
    file_size_limit(len(before) // 2)
    done = cli("report", str(run))
    assert (run / "report.html").read_bytes() == before and leftovers(run) == []
    assert one_line_error(done) == f"mgbench: error: run folder {run}: File too large ({run / 'report.html'})"


def test_a_runs_temporary_folder_is_its_own_short_and_gone_after(tmp_path, in_process, monkeypatch, capsys):
    """A run's TMPDIR is a folder of its own, named for the watchdog, removed once the run ends;
    its path stays short whatever the run folder's (a Unix socket's path has 107 bytes)."""
    import mgbench.runner.orchestrator as orchestrator

    seen = []
    execute_nodes = orchestrator.execute_nodes

    def watched(nodes, env, timeout, log_path):
        seen.append((Path(env["TMPDIR"]), env[SCRATCH_ENV], Path(env["TMPDIR"]).is_dir()))
        return execute_nodes(nodes, env, timeout, log_path)

    monkeypatch.setattr(orchestrator, "execute_nodes", watched)
    out = tmp_path.joinpath(*["a-long-folder-name-of-a-shared-file-system"] * 4, "run")
    assert main(["compare", *FAKE_JOB, "--out", str(out)]) == 0, capsys.readouterr().err
    ((temporary, named, made),) = seen
    assert made and named == str(temporary) and temporary.name.startswith("mgbench-run-")
    assert len(str(temporary / "pymp-abcdefgh" / "listener-abcdefgh")) < 100 < len(str(out))
    assert not temporary.exists()


def test_a_profilers_trace_is_not_written_through_a_planted_link(tmp_path, outside, fake_plugin):
    """A profiler opens the trace's path itself: the name is cleared before it writes."""
    import fakefw

    class WritingProfiler(fakefw.FakeAdapter):
        def profile(self, run_steps, trace_path):
            run_steps()
            with open(trace_path, "w") as trace:  # as a profiler's exporter writes it
                trace.write(json.dumps({"traceEvents": []}))

    profiles = tmp_path / "profiles"
    plant("hardlink", profiles / "rank0-trace.json", outside)
    config = RunConfig.flat("fake", "steady", "tiny", 1, "cpu", 4, 6, profile_steps=2)
    result = run_training(WritingProfiler("steady"), config, profile_dir=profiles, profiler="torch.profiler")
    assert result.status == "ok" and outside.read_text() == OUTSIDE
    assert json.loads((profiles / "rank0-trace.json").read_text()) == {"traceEvents": []}


@pytest.mark.slow
def test_counting_flops_leaves_no_compiler_cache_in_the_temporary_folder(tmp_path):
    """Importing torchvision makes torch's compiler cache (`torchinductor_<user>`) in
    TMPDIR by default and names it in the environment runs inherit: counting puts it beside the
    count cache and the environment back."""
    pytest.importorskip("torchvision")
    system_tmp, cache = tmp_path / "tmp", tmp_path / "cache" / "work.json"
    system_tmp.mkdir()
    code = (
        "import os; from mgbench.runner.counting import model_work; "
        "print(model_work('tiny', 32) is not None, os.environ.get('TORCHINDUCTOR_CACHE_DIR'))"
    )
    env = {**cli_env(TMPDIR=str(system_tmp), MGBENCH_WORK_CACHE=str(cache))}
    env.pop("TORCHINDUCTOR_CACHE_DIR", None)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.stdout.split() == ["True", "None"], done.stderr
    assert list(system_tmp.iterdir()) == []
    assert (cache.parent / "torchinductor").is_dir()
