"""Every hostile input is one line and exit code 2, or a line of a results file skipped and counted:
what a run folder holds is read against the types its classes declare, option values are
checked as they are parsed, Slurm's node names as `--hosts`' are, and `python -m mgbench` does
not run a `mgbench/` package that happens to sit in the working directory."""

from __future__ import annotations

import io
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
from conftest import cli_env, one_line_error

import mgbench
from mgbench.cli import main
from mgbench.core.config import RunConfig
from mgbench.core.errors import UsageError
from mgbench.core.job import MAX_IMAGE_SIZE
from mgbench.core.schema import MAX_DEPTH
from mgbench.datasets import labelmap
from mgbench.records.bandwidth import BandwidthReport
from mgbench.records.results import RunResult, read_result_lines
from mgbench.reports.folder_data import RunFolderData, load_run_folder
from mgbench.runner.hosts import MAX_NODES, Host, expand_nodelist, slurm_hosts

FIXTURE = Path(__file__).parent / "fixtures" / "run-folder-ddp-resnet50-2gpu"
"""Two ok rows (pytorch ddp ResNet-50 on 1 and 2 GPUs) and the bandwidth.json they ran with."""
DEEP = "[" * 100_000 + "]" * 100_000
"""JSON nested past Python's recursion limit."""
TRACE_HEADER = "seconds,kind,device,utilization_pct,memory_used_mib,memory_total_mib,sm_clock_mhz,mem_clock_mhz\n"
CONFIG = RunConfig.flat("fake", "steady", "tiny", 1, "cpu", 2, 4)


def refused(capsys: pytest.CaptureFixture, *args: str) -> str:
    """`mgbench ARGS` in this process, refused with one line and exit code 2 (argparse's refusal
    included, which exits); that line."""
    try:
        code = main(list(args))
    except SystemExit as stopped:
        code = stopped.code
    return one_line_error(subprocess.CompletedProcess(args, code, "", capsys.readouterr().err))


def run_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "run"
    shutil.copytree(FIXTURE, folder)
    return folder


def fixture_row(**changes: object) -> str:
    """The fixture's one-GPU row with `changes`, as a line of results.jsonl."""
    row = json.loads((FIXTURE / "results.jsonl").read_text().splitlines()[0])
    return json.dumps({**row, **changes})


def append_line(folder: Path, line: str) -> None:
    with (folder / "results.jsonl").open("a") as handle:
        handle.write(line + "\n")


@pytest.mark.parametrize(
    "line",
    [
        "[1, 2]",
        '"a row"',
        DEEP,
        "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1),
        fixture_row(samples_per_sec="fast"),
        fixture_row(step_seconds="abc"),
        fixture_row(compile=5),
        fixture_row(data_on_device="yes"),
        fixture_row(status="great"),
        fixture_row(samples_per_sec=0),
        fixture_row(samples_per_sec=math.nan),
        fixture_row(environment={"x": json.loads("[" * MAX_DEPTH + "]" * MAX_DEPTH)}),
    ],
    ids=lambda line: line[:20] if len(line) < 100 else f"row {len(line)}",
)
def test_a_results_line_that_is_no_whole_row_is_skipped_and_counted(tmp_path, line):
    folder = run_folder(tmp_path)
    append_line(folder, line)
    records, results, unreadable = read_result_lines(folder / "results.jsonl")
    assert [r.run_id for r in results] == ["pytorch-ddp-1cuda", "pytorch-ddp-2cuda"] and len(records) == 2
    assert unreadable == 1
    assert "1 line of results.jsonl could not be read" in " ".join(load_run_folder(folder).notes)


def test_a_byte_that_is_not_utf8_costs_its_line_not_the_file(tmp_path):
    folder = run_folder(tmp_path)
    lines = (folder / "results.jsonl").read_bytes().splitlines()
    (folder / "results.jsonl").write_bytes(b"\n".join([lines[0], b'{"error": "\xff"}', lines[1]]) + b"\n")
    data = load_run_folder(folder)
    assert [r.run_id for r in data.results] == ["pytorch-ddp-1cuda", "pytorch-ddp-2cuda"] and data.unreadable_lines == 1


def test_a_row_of_the_declared_types_reads_back_and_one_of_others_is_refused_naming_the_field():
    row = RunResult.flat(CONFIG, "ok", samples_per_sec=10.0, losses=[0.5, math.nan], eval_metrics={"auc": math.nan})
    record = row.to_record()
    assert RunResult.from_record(json.loads(json.dumps(record))).series.losses[0] == 0.5
    with pytest.raises(UsageError, match=re.escape("samples_per_sec is 'fast', not float | None")):
        RunResult.from_record({**record, "samples_per_sec": "fast"})
    with pytest.raises(UsageError, match="not a result row: list instead of an object"):
        RunResult.from_record([record])
    with pytest.raises(UsageError, match=re.escape("compile is 5, not str | None")):
        RunConfig.from_dict({**CONFIG.to_dict(), "compile": 5})
    with pytest.raises(UsageError, match="seed"):
        RunConfig.from_dict({**CONFIG.to_dict(), "seed": 1.5})


@pytest.mark.parametrize("text", [DEEP, '{"configs": [], "resumed": ' + "[" * 40 + "]" * 40 + "}"])
def test_a_compare_json_nested_too_deep_is_one_line(tmp_path, capsys, text):
    folder = run_folder(tmp_path)
    (folder / "compare.json").write_text(text)
    line = refused(capsys, "report", str(folder))
    assert "compare.json cannot be read: it nests deeper than" in line and "the plan is lost" in line


@pytest.mark.parametrize(
    "change, why",
    [
        (DEEP, "nests deeper than"),
        ({"devices": "two"}, "devices is 'two', not int"),
        ({"host_to_device_gbps": {"pinned": "fast"}}, "host_to_device_gbps"),
        ({"allreduce": [{"bytes": 1}]}, "an all-reduce entry lacks one of bytes"),
        ({"link": "mine"}, "unexpected keyword argument 'link'"),
        ([1], "list instead of an object"),
    ],
)
def test_a_bandwidth_json_of_other_types_is_refused_by_every_verb_that_reads_it(tmp_path, capsys, change, why):
    folder = run_folder(tmp_path)
    path = folder / "bandwidth.json"
    if isinstance(change, dict):
        path.write_text(json.dumps({**json.loads(path.read_text()), **change}))
    else:
        path.write_text(change if isinstance(change, str) else json.dumps(change))
    with pytest.raises(UsageError, match="is not a bandwidth.json measured by mgbench") as error:
        BandwidthReport.read(path)
    assert why in str(error.value)
    assert "is not a bandwidth.json measured by mgbench" in refused(capsys, "project", str(folder), "--gpus", "8")
    assert BandwidthReport.read(FIXTURE / "bandwidth.json").devices == 2


@pytest.mark.parametrize(
    "samples", ["0.1,cuda,0,abc,1,2,3,4\n0.2,cuda,0,50,x,2,3,4\n", "0.1,cuda,0,50,1,2,3,4\n0.2,cuda,0,50,1,2,\xff,4\n"]
)
def test_a_trace_with_text_where_numbers_belong_is_left_out(tmp_path, samples):
    folder = run_folder(tmp_path)
    (folder / "traces").mkdir()
    trace = folder / "traces" / "pytorch-ddp-1cuda.csv"
    trace.write_bytes(bytes(TRACE_HEADER + samples, "latin-1"))
    data = load_run_folder(folder)
    assert data.trace("pytorch-ddp-1cuda") is None
    trace.write_text(TRACE_HEADER + "0.1,cuda,0,50,1,2,,\n")
    assert RunFolderData(folder, [], data.frame).trace("pytorch-ddp-1cuda") is not None


@pytest.mark.parametrize(
    "change, message",
    [
        ({"breakdown": {"compute": math.nan}}, r"1cuda: breakdown's compute (nan|None) is not a share from 0 to 1"),
        ({"breakdown": {"compute": -0.5}}, r"1cuda: breakdown's compute -0.5 is not a share from 0 to 1"),
        ({"input_wait_fraction": 1.5, "breakdown": None}, r"1cuda: input_wait_fraction 1.5 is not a share from 0"),
    ],
)
def test_project_refuses_a_row_whose_step_it_cannot_take_naming_it(tmp_path, capsys, change, message):
    folder = run_folder(tmp_path)
    rows = [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]
    breakdown = change.get("breakdown")
    if isinstance(breakdown, dict):
        change = {"breakdown": {**rows[0]["breakdown"], **breakdown}}
    rows[0].update(change)
    (folder / "results.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert re.search(message, refused(capsys, "project", str(folder), "--gpus", "8", "--interconnect", "nvlink4"))
    assert not (folder / "projection.json").exists()


@pytest.mark.parametrize("rate", [-3980.0, None])
def test_project_leaves_out_an_ok_row_without_a_positive_rate_and_projects_the_others(tmp_path, capsys, rate):
    folder = run_folder(tmp_path)
    (folder / "results.jsonl").write_text(
        fixture_row(samples_per_sec=rate) + "\n" + FIXTURE.joinpath("results.jsonl").read_text().splitlines()[1] + "\n"
    )
    assert main(["project", str(folder), "--gpus", "8", "--interconnect", "nvlink4"]) == 0, capsys.readouterr().err
    (series,) = json.loads((folder / "projection.json").read_text())["series"]
    assert series["inputs"]["one_device_step_source"] == "modelled from pytorch-ddp-2cuda"


LONG_NAME = "x" * 256


@pytest.mark.parametrize(
    "args, message",
    [
        (["compare", "--frameworks", "fake", "--out", f"{{tmp}}/{LONG_NAME}"], "argument --out: xxx"),
        (["compare", "--resume", f"{{tmp}}/{LONG_NAME}/run"], "argument --resume: xxx"),
        (["run", "--framework", "fake", "--out", f"{{tmp}}/{LONG_NAME}"], "argument --out: xxx"),
        (["bandwidth", "--out", f"{{tmp}}/{LONG_NAME}"], "argument --out: xxx"),
        (["run", "--framework", "fake", "--timeout", "nan"], "argument --timeout: takes a positive number"),
        (["run", "--framework", "fake", "--timeout", "-5"], "argument --timeout: takes a positive number"),
        (["bandwidth", "--timeout", "nan"], "argument --timeout: takes a positive number of seconds"),
        (["compare", "--frameworks", "fake", "--hosts", ""], "argument --hosts: --hosts is empty"),
        (["compare", "--frameworks", "fake", "--hosts=-oProxyCommand=x:1"], "argument --hosts: --hosts takes"),
        (["run", "--framework", "fake", "--seed", "-1"], "the seed must be 0 to 2**32 - 1 (32 bits), got -1"),
        (
            ["run", "--framework", "fake", "--seed", str(2**32)],
            f"the seed must be 0 to 2**32 - 1 (32 bits), got {2**32}",
        ),
        (
            ["run", "--framework", "fake", "--dataset", "chestxray:~no-such-user-mgbench/x"],
            "no such user's home folder",
        ),
        (
            ["compare", "--frameworks", "fake", "--image-size", "99984", "--out", "{tmp}/run"],
            f"image size must be 16 to {MAX_IMAGE_SIZE} px, got 99984",
        ),
    ],
)
def test_a_bad_option_value_is_one_line_before_anything_starts(tmp_path, capsys, fake_plugin, args, message):
    args = [arg.format(tmp=tmp_path) for arg in args]
    line = (
        refused(capsys, *args, "--model", "tiny", "--steps", "1") if args[0] != "bandwidth" else refused(capsys, *args)
    )
    assert message in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("verb", [["list"], ["report", str(FIXTURE), "--format", "csv"]])
def test_output_that_cannot_be_written_is_one_line(tmp_path, capsys, monkeypatch, verb):
    """stdout on a full disk (`mgbench list > /dev/full`): one line on stderr, exit code 2."""
    folder = run_folder(tmp_path)
    with open("/dev/full", "w") as full:
        monkeypatch.setattr(sys, "stdout", full)
        line = refused(capsys, *[str(folder) if arg == str(FIXTURE) else arg for arg in verb])
        monkeypatch.undo()
    assert line == "mgbench: error: cannot write the output: No space left on device"


def test_setup_with_an_interpreter_that_does_not_exist_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MGBENCH_VENVS", str(tmp_path))
    assert main(["setup", "pytorch", "--python", str(tmp_path / "no-python")]) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("mgbench: error: setting up pytorch failed at: ") and "(No such file or directory)" in last


def npz_of(path: Path, members: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)


def npy_bytes(array: np.ndarray, header: dict | None = None) -> bytes:
    """`array` as a .npy file, its header replaced by `header` where given."""
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, header or np.lib.format.header_data_from_array_1_0(array))
    buffer.write(array.tobytes())
    return buffer.getvalue()


HUGE_HEADER = {"descr": "<f4", "fortran_order": False, "shape": (10**13,)}
"""A header claiming 36 TiB of float32, which reading the array would try to allocate."""


@pytest.mark.parametrize(
    "make, reason",
    [
        (lambda path: path.write_bytes(b""), "File is not a zip file"),
        (lambda path: path.write_bytes(npy_bytes(np.zeros(3, np.float32))), "File is not a zip file"),
        (lambda path: npz_of(path, {"w.npy": npy_bytes(np.zeros(3, "f4,i4"))}), "w.npy is an array of [("),
        (lambda path: npz_of(path, {"w.npy": npy_bytes(np.array(["a"]))}), "w.npy is an array of <U1, not of numbers"),
        (lambda path: npz_of(path, {"w.npy": npy_bytes(np.zeros(4, np.float32), HUGE_HEADER)}), "claims 4000000"),
        (lambda path: npz_of(path, {"w.npy": b"not an array"}), "the magic string is not correct"),
        (lambda path: os.mkfifo(path), "a FIFO, not a regular file"),
        (lambda path: path.mkdir(), "a folder, not a regular file"),
        (lambda path: None, "No such file or directory"),
    ],
    ids=["empty", "npy", "structured", "text", "huge-header", "no-array", "fifo", "folder", "missing"],
)
def test_an_init_file_that_cannot_be_read_is_one_line_before_anything_is_written(
    tmp_path, capsys, fake_plugin, make, reason
):
    make(tmp_path / "w.npz")
    out = tmp_path / "run"
    line = refused(capsys, "compare", "--frameworks", "fake", "--init", str(tmp_path / "w.npz"), "--out", str(out))
    assert f"--init {tmp_path / 'w.npz'}: not a readable .npz of weights (" in line and reason in line
    assert not out.exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["convert-weights", "a.pth", "{tmp}/a.npz", "--seed", "-1"],
            "argument --seed: the seed must be 0 to 2**32 - 1",
        ),
        (["convert-weights", "a.pth", "{tmp}/a.npz", "--seed", str(10**23)], f"(32 bits), got {10**23}"),
        (["make-sample-chestxray", "{tmp}/s", "--seed", "-1"], "argument --seed: the seed must be 0 to 2**32 - 1"),
        (["make-sample-chestxray", "{tmp}/s", "--seed", str(10**23)], f"(32 bits), got {10**23}"),
        (
            ["make-sample-chestxray", "{tmp}/s", "--size", "100000"],
            f"--size: image size must be 32 to {MAX_IMAGE_SIZE}",
        ),
        (
            ["prepare", "chestxray", "{tmp}", "{tmp}/p", "--size", "100000"],
            f"image size must be 16 to {MAX_IMAGE_SIZE}",
        ),
    ],
)
def test_a_seed_or_a_size_out_of_range_is_one_line_for_every_verb(tmp_path, capsys, args, message):
    """Every verb that draws from a seed takes the seeds a job takes; every verb that writes images
    takes the sides a job trains on (`job.MAX_IMAGE_SIZE`), refused before anything is written."""
    assert message in refused(capsys, *[arg.format(tmp=tmp_path) for arg in args])
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("count", ["9", "-5", "1000001", str(10**12), "99999999999999999999"])
def test_a_sample_of_too_few_or_too_many_images_is_one_line_before_anything_is_written(tmp_path, capsys, count):
    """A count past what memory holds is refused as it is read, not met as a MemoryError (or
    numpy's ValueError for an array too large) once drawing has begun."""
    line = refused(capsys, "make-sample-chestxray", str(tmp_path / "s"), "--n", count)
    assert f"--n takes 10 (a training and a validation split) to 1,000,000 images, got {count}" in line
    assert list(tmp_path.iterdir()) == []


def test_a_name_too_long_says_how_long_a_name_may_be(tmp_path, capsys):
    line = refused(capsys, "bandwidth", "--out", str(tmp_path / LONG_NAME / "x"))
    assert "is 256 bytes long; a file system takes names of at most 255" in line


@pytest.mark.parametrize(
    "nodelist, message",
    [
        ("gpu[a-b]", "SLURM_JOB_NODELIST 'gpu[a-b]' is not a Slurm node list"),
        ("gpu[1-x]", "SLURM_JOB_NODELIST 'gpu[1-x]' is not a Slurm node list"),
        (",", "SLURM_JOB_NODELIST ',' is not a Slurm node list"),
        ("-oProxyCommand=touch /tmp/x", "names '-oProxyCommand=touch /tmp/x', which is not a host name"),
        ("gpu1,-x[1-2]", "names '-x1', which is not a host name"),
    ],
)
def test_a_slurm_node_list_is_checked_as_hosts_are(monkeypatch, nodelist, message):
    monkeypatch.setenv("PATH", "/nonexistent")  # no scontrol: the built-in expansion
    with pytest.raises(UsageError, match="--hosts slurm: ") as error:
        slurm_hosts({"SLURM_JOB_NODELIST": nodelist, "SLURM_NTASKS_PER_NODE": "2"})
    assert message in str(error.value)


def test_a_node_list_scontrol_refuses_is_one_line(tmp_path, monkeypatch):
    (tmp_path / "scontrol").write_text("#!/bin/sh\necho 'scontrol: error: Invalid hostlist' >&2\nexit 1\n")
    (tmp_path / "scontrol").chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(UsageError, match="'gpu\\[a-b\\]' is not a Slurm node list"):
        slurm_hosts({"SLURM_JOB_NODELIST": "gpu[a-b]", "SLURM_NTASKS_PER_NODE": "2"})


@pytest.mark.parametrize(
    "nodelist, count",
    [
        (f"node[1-{MAX_NODES + 1}]", MAX_NODES + 1),
        ("node[1-10000000]", 10_000_000),
        ("node[1-99999999999999999999]", 99999999999999999999),
        ("rack[1-200]-gpu[001-100],login1", 20_001),
        (f"a[1-{MAX_NODES}],b", MAX_NODES + 1),
    ],
)
@pytest.mark.parametrize("scontrol", [False, True], ids=["built-in", "scontrol"])
def test_a_node_list_of_more_nodes_than_mgbench_spans_is_counted_not_expanded(
    tmp_path, monkeypatch, nodelist, count, scontrol
):
    """Counted from its ranges' bounds, before any name is made or scontrol is asked (which would
    print them all): refused at once, however many nodes it names."""
    asked = tmp_path / "scontrol-asked"
    (tmp_path / "scontrol").write_text(f"#!/bin/sh\ntouch {asked}\nexit 1\n")
    (tmp_path / "scontrol").chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path) if scontrol else "/nonexistent")
    started = time.monotonic()
    with pytest.raises(UsageError) as error:
        slurm_hosts({"SLURM_JOB_NODELIST": nodelist, "SLURM_NTASKS_PER_NODE": "2"})
    assert str(error.value) == (
        f"--hosts slurm: SLURM_JOB_NODELIST {nodelist!r} names {count:,} nodes; mgbench spans at most {MAX_NODES:,}"
    )
    assert time.monotonic() - started < 1 and not asked.exists()


def test_a_node_list_of_as_many_nodes_as_mgbench_spans_and_of_several_ranges_expands(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")  # no scontrol: the built-in expansion
    hosts = slurm_hosts({"SLURM_JOB_NODELIST": f"node[1-{MAX_NODES}]", "SLURM_NTASKS_PER_NODE": "2"})
    assert len(hosts) == MAX_NODES and hosts[-1] == Host(f"node{MAX_NODES}", 2)
    assert expand_nodelist("rack[1-2]-gpu[01-02,07],login1") == [
        *("rack1-gpu01", "rack1-gpu02", "rack1-gpu07", "rack2-gpu01", "rack2-gpu02", "rack2-gpu07"),
        "login1",
    ]


@pytest.mark.parametrize("nodelist", ["gpu[3-1]", "gpu[1-]", "gpu[1-2", "gpu]1[", "gpu[[1-2]]"])
def test_a_node_list_with_a_backward_or_open_range_is_no_node_list(monkeypatch, nodelist):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(UsageError, match=re.escape(f"SLURM_JOB_NODELIST {nodelist!r} is not a Slurm node list")):
        slurm_hosts({"SLURM_JOB_NODELIST": nodelist, "SLURM_NTASKS_PER_NODE": "2"})


@pytest.mark.parametrize("tasks", ["0", "00", "0(x2)", "-1", "abc", "4x", "2(x3),1", "1.5"])
def test_a_task_count_of_no_processes_or_no_number_is_one_line(tmp_path, capsys, fake_plugin, monkeypatch, tasks):
    """A count that is zero or no count is refused saying what it takes, before the device counts
    are checked against it (which read a zero as `use at most 0 (one host) or 0 (all)`)."""
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setenv("SLURM_JOB_NODELIST", "gpu[1-2]")
    monkeypatch.setenv("SLURM_NTASKS_PER_NODE", tasks)
    line = refused(
        capsys, "compare", "--frameworks", "fake", "--model", "tiny", "--hosts", "slurm", "--out", f"{tmp_path}/run"
    )
    assert line == (
        f"mgbench: error: --hosts slurm: SLURM_NTASKS_PER_NODE is {tasks!r}, not a count of processes per node "
        "(1 or more: one per GPU, --ntasks-per-node=GPUS)"
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("tasks, slots", [("4", 4), ("4(x2)", 4), ("08", 8)])
def test_a_task_count_as_slurm_writes_it_is_the_slots_of_every_node(monkeypatch, tasks, slots):
    monkeypatch.setenv("PATH", "/nonexistent")
    hosts = slurm_hosts({"SLURM_JOB_NODELIST": "gpu[1-2]", "SLURM_NTASKS_PER_NODE": tasks})
    assert hosts == [Host("gpu1", slots), Host("gpu2", slots)]


def test_a_labels_json_nested_too_deep_is_one_line(tmp_path):
    (tmp_path / "labels.json").write_text('{"a.png": ' + DEEP + "}")
    with pytest.raises(UsageError, match="cannot read label file .*labels.json: it nests past"):
        labelmap.describe(tmp_path)


def test_python_m_mgbench_refuses_another_mgbench_in_the_working_directory(tmp_path):
    """The working directory holds a copy of mgbench (another checkout, an old version): `python -m`
    finds it first and runs it, so it is what must refuse, naming both. (Run from the checkout that
    is installed, as every test that starts `python -m mgbench` from the repository does, it runs.)"""
    package = Path(mgbench.__file__).parent
    shutil.copytree(package, tmp_path / "mgbench", ignore=shutil.ignore_patterns("__pycache__"))
    init = tmp_path / "mgbench" / "__init__.py"
    init.write_text(init.read_text() + '\n__version__ = "0.0.0+copy"\n')
    command = [sys.executable, "-m", "mgbench", "--version"]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, env=cli_env(), timeout=60)
    line = one_line_error(done)
    assert f"ran {tmp_path / 'mgbench'}, the working directory's, not the installed {package}" in line
    assert "0.0.0+copy" not in done.stdout


def test_a_mgbench_package_of_its_own_in_the_working_directory_runs_under_python_m_only(tmp_path):
    """What holds, as docs/faults.md states it: `python -m` imports the working directory first, as
    Python does, so a `mgbench/` there with a `__main__.py` of its own runs before the installed
    mgbench has any say; the `mgbench` command and `python -P -m mgbench` never import it."""
    (tmp_path / "mgbench").mkdir()
    (tmp_path / "mgbench" / "__init__.py").write_text("")
    (tmp_path / "mgbench" / "__main__.py").write_text("open('ran', 'w').write('its own code')\n")
    script = Path(sys.executable).parent / "mgbench"
    for command in ([sys.executable, "-P", "-m", "mgbench", "--version"], [str(script), "--version"]):
        done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, env=cli_env(), timeout=60)
        assert done.stdout == f"mgbench {mgbench.__version__}\n" and not (tmp_path / "ran").exists(), done.stderr
    subprocess.run([sys.executable, "-m", "mgbench", "--version"], cwd=tmp_path, env=cli_env(), timeout=60)
    assert (tmp_path / "ran").exists()
