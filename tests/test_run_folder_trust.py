"""A run folder from elsewhere makes mgbench write only inside it, one compare writes a folder at
a time, and a folder or a disk that fails is one line: names read back are checked, every path
is resolved inside the folder, the lock names its holder, files follow the umask."""

from __future__ import annotations

import builtins
import errno
import fcntl
import io
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import cli_env, interruptible, mgbench, one_line_error, read_rows, tiny_job

from mgbench.cli import main
from mgbench.core.config import RunConfig
from mgbench.core.errors import UnsafeNameError, UsageError
from mgbench.datasets.check import time_limit
from mgbench.records.folder_lock import FolderLock
from mgbench.records.results import RunResult
from mgbench.records.runfolder import RunFolder
from mgbench.runner.hosts import parse_hosts
from mgbench.runner.monitor import DeviceMonitor

FAKE_JOB = ["--frameworks", "fake", "--gpus", "1", *tiny_job(4)]
HOSTILE = "/../../../x/victim"
"""A device kind that, in a run id, leads three folders up from a file of the run folder: out of
`shared/run/charts/<file>` (or `configs/`, `raw/`) into `shared/x/victim.*`."""
CONFIG = RunConfig.flat("fake", "steady", "tiny", 1, "cpu", 2, 4)


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A compare's folder: `steady` ok, `flaky` failed (a resume reruns it)."""
    out = tmp_path_factory.mktemp("compared") / "run"
    done = mgbench("compare", *FAKE_JOB, "--strategies", "steady,flaky", "--out", str(out), FAKE_FAIL="1")
    assert done.returncode == 1, done.stderr
    return out


def shared_copy(compared: Path, tmp_path: Path) -> Path:
    """The compare's folder copied to `shared/run`, beside an empty `shared/x` a planted name aims at."""
    run = tmp_path / "shared" / "run"
    shutil.copytree(compared, run)
    (tmp_path / "shared" / "x").mkdir()
    return run


def assert_nothing_outside(run: Path) -> None:
    shared = run.parent
    assert sorted(path.name for path in shared.iterdir()) == ["run", "x"]
    assert list((shared / "x").iterdir()) == []


def plant(run: Path, where: str) -> None:
    """The steady run's device kind replaced by `HOSTILE` in `results.jsonl` or `compare.json`."""
    if where == "results.jsonl":
        lines = (run / where).read_text().splitlines()
        row = json.loads(lines[0])
        row["device_kind"] = HOSTILE
        row["run_id"] = f"fake-steady-1{HOSTILE}"
        (run / where).write_text("\n".join([json.dumps(row), *lines[1:]]) + "\n")
    else:
        plan = json.loads((run / where).read_text())
        plan["configs"][0]["device_kind"] = HOSTILE
        (run / where).write_text(json.dumps(plan))


@pytest.fixture
def cli(fake_plugin, capsys: pytest.CaptureFixture):
    """`cli(*ARGS)`: `mgbench ARGS` run in this process (no interpreter to start, a fault can be
    injected), its exit code and output as a finished subprocess's."""

    def run(*args: str) -> subprocess.CompletedProcess:
        code = main(list(args))
        captured = capsys.readouterr()
        return subprocess.CompletedProcess(args, code, captured.out, captured.err)

    return run


def report_or_resume(cli, verb: str, run: Path) -> subprocess.CompletedProcess:
    return cli("report", str(run)) if verb == "report" else cli("compare", "--resume", str(run))


@pytest.mark.parametrize(
    "field, value",
    [
        ("framework", "../x"),
        ("strategy", "steady/../../x"),
        ("strategy", ".hidden"),
        ("device_kind", HOSTILE),
        ("devices", "1/../x"),
    ],
)
def test_a_config_read_back_refuses_a_name_that_is_no_plain_file_name(field, value):
    with pytest.raises(UnsafeNameError, match=field):
        RunConfig.from_dict({**CONFIG.to_dict(), field: value})
    assert RunConfig.from_dict(CONFIG.to_dict()) == CONFIG


def test_a_row_whose_run_id_is_not_its_configs_is_refused():
    row = RunResult.flat(CONFIG, "failed", error="x").to_record()
    with pytest.raises(UnsafeNameError, match="run_id"):
        RunResult.from_record({**row, "run_id": "../../elsewhere"})
    with pytest.raises(UsageError, match="not a run config"):
        RunConfig.from_dict(["fake"])


def test_every_path_of_a_run_folder_resolves_inside_it(tmp_path):
    folder = RunFolder(tmp_path / "run")
    assert folder.trace("fake-steady-1cpu") == tmp_path / "run" / "traces" / "fake-steady-1cpu.csv"
    with pytest.raises(UsageError, match="leads outside the run folder"):
        folder.trace("../../x")
    with pytest.raises(UsageError, match="leads outside the run folder"):
        folder.config_file("/etc/x")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "charts").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UsageError, match="leads outside the run folder"):
        folder.chart("throughput.png")


@pytest.mark.parametrize("name", ["-oProxyCommand=touch /tmp/x", "a b", "a;b", "$(x)"])
def test_a_host_name_that_ssh_or_a_shell_would_read_as_more_is_refused(name):
    """`compare --resume` hands the hosts recorded in a folder to ssh, as its argument."""
    with pytest.raises(UsageError, match="--hosts takes host:slots"):
        parse_hosts(f"{name}:1,node2:1")
    assert parse_hosts("node-1.example:1,[::1]:1,10.0.0.2:1")[1].name == "[::1]"


@pytest.mark.parametrize("where", ["results.jsonl", "compare.json"])
@pytest.mark.parametrize("verb", ["report", "resume"])
def test_a_planted_name_makes_report_and_resume_refuse_the_folder_writing_nothing(compared, tmp_path, cli, verb, where):
    run = shared_copy(compared, tmp_path)
    plant(run, where)
    before = {name: (run / name).read_bytes() for name in ("results.jsonl", "compare.json")}
    line = one_line_error(report_or_resume(cli, verb, run))
    assert where in line and "device_kind '/../../../x/victim'" in line
    assert_nothing_outside(run)
    assert {name: (run / name).read_bytes() for name in before} == before
    assert not (run / "compare.lock").exists()


@pytest.mark.parametrize("verb, link", [("report", "charts"), ("resume", "configs")])
def test_a_symbolic_link_out_of_the_folder_is_not_written_through(compared, tmp_path, cli, verb, link):
    run = shared_copy(compared, tmp_path)
    shutil.rmtree(run / link)
    (run / link).symlink_to(run.parent / "x")
    done = report_or_resume(cli, verb, run)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("mgbench: error: ") and "Traceback" not in done.stderr
    assert "leads outside the run folder" in done.stderr
    assert_nothing_outside(run)


@pytest.mark.parametrize("text", ["{}", "[]", '{"configs": [5]}', '{"configs": [], "options": {"timeout": "soon"}}'])
def test_a_compare_json_that_is_not_a_plan_is_one_line_for_report_and_resume(compared, tmp_path, cli, text):
    run = shared_copy(compared, tmp_path)
    (run / "compare.json").write_text(text)
    results = (run / "results.jsonl").read_text()
    for verb in ("report", "resume"):
        assert "compare.json is not a compare plan" in one_line_error(report_or_resume(cli, verb, run))
    assert (run / "results.jsonl").read_text() == results and (run / "compare.json").read_text() == text


VERBS = {
    "report": lambda run: ["report", run],
    "project": lambda run: ["project", run, "--gpus", "8", "--interconnect", "nvlink4"],
    "resume": lambda run: ["compare", "--resume", run],
    "diff": lambda run: ["diff", run, run],
}
"""Every verb that reads a run folder, as it is given one."""


PLAN_LOST = "compare.json cannot be read: a FIFO, not a regular file; the plan is lost"


@pytest.mark.parametrize("verb", VERBS)
@pytest.mark.parametrize(
    "where, refusals",
    [
        ("compare.json", dict.fromkeys(VERBS, PLAN_LOST)),
        ("results.jsonl", dict.fromkeys(VERBS, "results.jsonl cannot be read: a FIFO, not a regular file")),
        ("traces/fake-steady-1cpu.csv", {}),
        ("projection.json", {"project": "projection.json exists and was not written by mgbench project"}),
    ],
    ids=["plan", "results", "trace", "projection"],
)
def test_a_fifo_in_a_run_folder_is_never_waited_on(compared, tmp_path, cli, in_process, verb, where, refusals):
    """A FIFO holds its reader until someone writes to it: as the plan or the rows it is one line;
    as a trace or a projection it is left out, as a malformed one is (a
    projection `project` did not write is not replaced)."""
    run = shared_copy(compared, tmp_path)
    (run / where).parent.mkdir(parents=True, exist_ok=True)
    (run / where).unlink(missing_ok=True)
    os.mkfifo(run / where)
    with time_limit(30):
        done = cli(*VERBS[verb](str(run)))
    if verb in refusals:
        assert refusals[verb] in one_line_error(done)
    else:
        assert done.returncode == 0, done.stderr


def steady_line(run: Path, change) -> str:
    """The steady run's row of `run` as a line of `results.jsonl`, its object passed through
    `change` and its text through the `.replace` pairs `change` may add under `"text"`."""
    row = json.loads((run / "results.jsonl").read_text().splitlines()[0])
    changed = change(row)
    text = json.dumps({key: value for key, value in changed.items() if key != "text"})
    for old, new in changed.get("text", []):
        text = text.replace(old, new)
    return text


def without(key: str):
    return lambda row: {name: value for name, value in row.items() if name != key}


BAD_LINES = {
    "digits past the int limit": lambda row: {
        **row,
        "wall_seconds": 1,
        "text": [('"wall_seconds": 1', '"wall_seconds": ' + "7" * 5000)],
    },
    "an int beyond a float": lambda row: {**row, "samples_per_sec": 10**400},
    "no status": without("status"),
    "ok, no rate": without("samples_per_sec"),
    "ok, rate null": lambda row: {**row, "samples_per_sec": None},
    "ok, rate 1e999": lambda row: {
        **row,
        "samples_per_sec": 1,
        "text": [('"samples_per_sec": 1,', '"samples_per_sec": 1e999,')],
    },
    "torn": lambda row: row,
}
"""Lines of `results.jsonl` that are no row mgbench wrote: each is skipped and counted."""
READERS = {"torn": ("diff",), "digits past the int limit": (*VERBS,), "no status": (*VERBS,)}
"""The verbs each bad line is put to (`report`, `project` and `diff` where not named): a torn
line is said by `report` and skipped by `project` already, and `--resume` takes its runs from
`rounds.jsonl`, meeting a later results line only where reading the line itself fails."""


@pytest.mark.parametrize(
    "bad, verb", [(bad, verb) for bad in BAD_LINES for verb in READERS.get(bad, ("report", "project", "diff"))]
)
def test_a_line_that_is_no_row_is_skipped_and_counted_by_every_verb(compared, tmp_path, cli, in_process, verb, bad):
    """Appended after the rows, as a later row of the steady run: the rows read are the folder's
    own, the line is counted where the verb shows what it read, and no verb gives a traceback."""
    run = shared_copy(compared, tmp_path)
    line = steady_line(run, BAD_LINES[bad])
    if bad == "torn":
        line = line[: len(line) // 2]
    with (run / "results.jsonl").open("a") as handle:
        handle.write(line + "\n")
    done = cli(*(["diff", str(compared), str(run)] if verb == "diff" else VERBS[verb](str(run))))
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    said = "1 line of results.jsonl could not be read and is left out."
    if verb == "report":
        assert said in (run / "report.html").read_text()
    if verb == "diff":
        assert f"NEW ({run}): {said}" in done.stdout and "(2 compared)" in done.stdout


@pytest.mark.parametrize("verb", ["report", "project", "diff", "resume"])
@pytest.mark.parametrize(
    "number, refusal",
    [
        ("7" * 5000, "it holds a number of more than 4300 digits"),
        ("7" * 400, "it holds a number of 400 digits, more than a float holds"),
    ],
    ids=["past the int limit", "beyond a float"],
)
def test_a_compare_json_holding_a_number_no_float_holds_is_one_line(compared, tmp_path, cli, verb, number, refusal):
    run = shared_copy(compared, tmp_path)
    plan = (run / "compare.json").read_text()
    (run / "compare.json").write_text(plan.replace('"timeout": ', f'"timeout": {number}, "was": ', 1))
    done = cli(*(["diff", str(compared), str(run)] if verb == "diff" else VERBS[verb](str(run))))
    assert f"compare.json cannot be read: {refusal}; the plan is lost" in one_line_error(done)


def test_a_bandwidth_json_that_mgbench_did_not_measure_is_refused_up_front(tmp_path, cli):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "bandwidth.json").write_text('{"link": "mine"}')
    line = one_line_error(cli("compare", *FAKE_JOB, "--out", str(out)))
    assert "bandwidth.json is not a bandwidth.json measured by mgbench" in line
    assert [path.name for path in out.iterdir()] == ["bandwidth.json"]
    assert (out / "bandwidth.json").read_text() == '{"link": "mine"}'


@pytest.mark.parametrize(
    "option",
    [
        ["--steps", "3"],
        ["--model", "tiny"],
        ["--frameworks", "fake"],
        ["--gpus", "2"],
        ["--bandwidth"],
        ["--cold-cache"],
    ],
)
def test_resume_refuses_an_option_that_would_change_the_recorded_plan(compared, tmp_path, cli, option):
    run = shared_copy(compared, tmp_path)
    line = one_line_error(cli("compare", "--resume", str(run), *option))
    assert (
        f"--resume runs the plan recorded in {run}, so it takes no {option[0]} (only --timeout, --repeat and --format)"
        in line
    )
    assert (run / "results.jsonl").read_text() == (compared / "results.jsonl").read_text()


def test_main_checks_and_records_the_arguments_it_is_given_not_sys_argv(compared, tmp_path, cli, monkeypatch):
    run = shared_copy(compared, tmp_path)
    monkeypatch.setattr(sys, "argv", ["mgbench", "compare", "--resume", str(run)])
    line = one_line_error(cli("compare", "--resume", str(run), "--steps", "5"))
    assert (
        f"--resume runs the plan recorded in {run}, so it takes no --steps (only --timeout, --repeat and --format)"
        in line
    )
    assert (run / "results.jsonl").read_text() == (compared / "results.jsonl").read_text()
    monkeypatch.setattr(sys, "argv", ["mgbench", "compare", "--resume", str(run), "--steps", "5"])
    monkeypatch.setenv("PYTHONPATH", cli_env()["PYTHONPATH"])  # the runs' workers load the fake adapter
    assert cli("compare", "--resume", str(run), "--timeout", "60").returncode == 0
    resumed = json.loads((run / "compare.json").read_text())["resumed"]
    assert resumed == [f"mgbench compare --resume {run} --timeout 60"]


@pytest.mark.slow
def test_a_second_compare_or_a_resume_into_a_held_folder_is_refused_naming_the_holder(tmp_path):
    out = tmp_path / "held"
    command = [sys.executable, "-m", "mgbench", "compare", "--frameworks", "fake", "--strategies", "slow"]
    first = subprocess.Popen(
        [*command, "--gpus", "1", *tiny_job(60), "--out", str(out)],
        env=cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=interruptible,
    )
    lock = out / "compare.lock"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not ((out / "compare.json").exists() and lock.exists()):
        time.sleep(0.1)
    try:
        assert json.loads(lock.read_text())["pid"] == first.pid
        for args in (["compare", *FAKE_JOB, "--out", str(out)], ["compare", "--resume", str(out)]):
            line = one_line_error(mgbench(*args))
            assert f"is in use by another mgbench (pid {first.pid} on {socket.gethostname()}, since " in line
        assert first.poll() is None
    finally:
        first.send_signal(signal.SIGTERM)
        _, stderr = first.communicate(timeout=60)
    assert first.returncode == 130, stderr
    assert list(read_rows(out).status) == ["interrupted"]
    assert not lock.exists()


HOLD = """import sys, time
from pathlib import Path
from mgbench.records.folder_lock import FolderLock
with FolderLock(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(600)
"""
"""A process that holds the lock file it is given until it is killed."""


@pytest.fixture
def held(compared: Path, tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen]]:
    """A copy of the compare's folder whose lock another live process holds, and that process."""
    run = shared_copy(compared, tmp_path)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(run / "compare.lock")], env=cli_env(), stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        yield run, holder
    finally:
        holder.kill()
        holder.wait()


def folder_state(run: Path) -> dict[str, tuple[bytes, int]]:
    """Every file of the folder: its bytes and when it was last written."""
    return {str(p.relative_to(run)): (p.read_bytes(), p.stat().st_mtime_ns) for p in run.rglob("*") if p.is_file()}


@pytest.mark.parametrize(
    "args",
    [
        ["report", "{run}"],
        ["report", "{run}", "--format", "csv"],
        ["project", "{run}", "--gpus", "8", "--interconnect", "nvlink4"],
        ["run", "--framework", "fake", "--strategy", "steady", "--gpus", "1", *tiny_job(4), "--out", "{run}"],
        ["bandwidth", "--device", "cpu", "--gpus", "2", "--out", "{run}"],
    ],
    ids=["report", "report-format", "project", "run-out", "bandwidth-out"],
)
def test_every_verb_that_writes_a_folder_another_holds_is_refused_naming_the_holder(held, cli, monkeypatch, args):
    run, holder = held
    monkeypatch.setenv("PYTHONPATH", cli_env()["PYTHONPATH"])  # were a run started, its workers would find fakefw
    before = folder_state(run)
    line = one_line_error(cli(*[arg.format(run=run) for arg in args]))
    assert f"run folder {run} is in use by another mgbench (pid {holder.pid} on {socket.gethostname()}, since " in line
    assert folder_state(run) == before


def test_a_lock_left_by_a_compare_that_is_gone_is_taken_over_saying_so(compared, tmp_path):
    run = shared_copy(compared, tmp_path)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    holder = {"pid": int(gone.stdout), "host": socket.gethostname(), "since": "2025-01-01T00:00:00"}
    (run / "compare.lock").write_text(json.dumps(holder))
    done = mgbench("compare", "--resume", str(run))
    assert done.returncode == 0, done.stderr
    expected = f"lock taken over from an mgbench that is gone (pid {holder['pid']} on {holder['host']}, since 2025"
    assert expected in done.stderr
    assert list(read_rows(run).status) == ["ok", "ok"] and not (run / "compare.lock").exists()


def test_the_os_lock_decides_and_without_one_the_recorded_holder_does(tmp_path, monkeypatch):
    path = tmp_path / "compare.lock"
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    recorded = json.dumps({"pid": alive.pid, "host": socket.gethostname(), "since": "then"})
    try:
        path.write_text(recorded)
        with FolderLock(path) as lock:  # the live pid holds no OS lock: a reused pid, not a holder
            assert lock.taken_over is not None and lock.taken_over.pid == alive.pid
            with pytest.raises(UsageError, match=f"in use by another mgbench \\(pid {os.getpid()} "), FolderLock(path):
                pass
        assert not path.exists()

        def no_locks(fd: int, operation: int) -> None:
            raise OSError(errno.ENOSYS, os.strerror(errno.ENOSYS))

        monkeypatch.setattr(fcntl, "flock", no_locks)
        path.write_text(recorded)
        with pytest.raises(UsageError, match=f"pid {alive.pid} "), FolderLock(path):
            pass
    finally:
        alive.kill()
        alive.wait()
    with FolderLock(path) as lock:
        assert lock.taken_over is not None and lock.taken_over.pid == alive.pid


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


def test_a_full_disk_during_a_compare_is_one_line_and_the_compare_resumes(tmp_path, fake_plugin, monkeypatch, capsys):
    monkeypatch.setenv("PYTHONPATH", cli_env()["PYTHONPATH"])  # the runs' workers load the fake adapter
    fsync = os.fsync

    def full_for_results(fd: int) -> None:
        if Path(os.readlink(f"/proc/self/fd/{fd}")).name.startswith(".results.jsonl."):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        fsync(fd)

    monkeypatch.setattr(os, "fsync", full_for_results)
    out = tmp_path / "full"
    assert main(["compare", *FAKE_JOB, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == (
        f"mgbench: error: run folder {out}: No space left on device ({out / 'results.jsonl'}); "
        f"the rows written are kept; continue with: mgbench compare --resume {out}"
    )
    # the round's own row was written before the results file it failed on: a resume keeps it
    assert sorted(path.name for path in out.iterdir() if path.is_file()) == [
        "compare.json",
        "initial-weights.npz",
        "rounds.jsonl",
    ]
    monkeypatch.undo()
    resumed = mgbench("compare", "--resume", str(out))
    assert resumed.returncode == 0, resumed.stderr
    assert list(read_rows(out).status) == ["ok"]


def test_a_trace_the_monitor_cannot_write_is_raised_where_the_run_is_watched(tmp_path):
    """Not printed as a traceback by the sampling thread: raised at the monitor's exit, in the
    compare, which ends with one line (a disk too full for the trace is too full for the row)."""
    unwritable = tmp_path / "trace.csv"
    unwritable.mkdir()
    with pytest.raises(IsADirectoryError), DeviceMonitor(unwritable, []):
        time.sleep(0.05)


def read_only(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """Every way this process writes a file or folder under `folder` fails as on a read-only
    mount (EROFS), whoever runs the test (root writes into a folder whatever its mode)."""

    def refuse(path: object) -> None:
        if isinstance(path, str | os.PathLike) and Path(os.path.abspath(path)).is_relative_to(folder):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))

    def guarded(write, opens_files: bool = False):
        def call(path, *args, **kwargs):
            mode = args[0] if args else kwargs.get("mode", "r")
            if not opens_files or set(str(mode)) & set("wax+"):
                refuse(path)
            return write(path, *args, **kwargs)

        return call

    os_open = os.open

    def guarded_os_open(path, flags, *args, **kwargs):
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            refuse(path)
        return os_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", guarded_os_open)
    monkeypatch.setattr(builtins, "open", guarded(builtins.open, opens_files=True))
    monkeypatch.setattr(io, "open", guarded(io.open, opens_files=True))
    for name in ("mkdir", "unlink", "replace", "rename"):
        monkeypatch.setattr(os, name, guarded(getattr(os, name)))


def test_report_on_a_read_only_folder_is_one_line(compared, tmp_path, monkeypatch, cli):
    run = shared_copy(compared, tmp_path)
    read_only(monkeypatch, run)
    line = one_line_error(cli("report", str(run)))
    # The lock is the first file report writes.
    assert line.startswith(f"mgbench: error: run folder {run}: Read-only file system ({run / 'compare.lock'}")
