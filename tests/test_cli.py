"""The command line as users meet it: help without frameworks, and bad input as one line, exit 2."""

import os

import pytest
from conftest import mgbench


def exit_code(main, args: list[str]) -> int:
    """`main(args)`'s exit code, whether returned or raised (argparse's errors exit)."""
    try:
        return main(args)
    except SystemExit as done:
        return int(done.code)


def test_help_lists_the_verbs():
    done = mgbench("--help")
    assert done.returncode == 0
    for verb in ("compare", "run", "report", "list", "env", "setup"):
        assert verb in done.stdout


def test_package_import_pulls_in_no_framework():
    import subprocess
    import sys

    code = "import sys, mgbench.cli, mgbench.runner.orchestrator; print(sorted(m for m in ('torch','tensorflow','jax','mxnet','chainer') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_list_shows_frameworks_models_and_install_state():
    done = mgbench("list")
    assert done.returncode == 0, done.stderr
    for word in ("pytorch", "ddp", "dp-loss", "densenet121", "inception_v3", "fake"):
        assert word in done.stdout


@pytest.mark.parametrize("columns", [None, "100", "300"], ids=["piped", "columns-100", "columns-300"])
def test_list_fits_100_columns_piped_or_wide_and_splits_no_word(columns):
    """Piped (200 columns for tables elsewhere) or in a wider terminal, `list` takes 100 columns
    at most; every word of every strategy's description is whole on some line."""
    from mgbench.cli.catalog import strategy_text
    from mgbench.frameworks.registry import registered

    done = mgbench("list", **({"COLUMNS": columns} if columns else {}))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= 100 and all(line == line.rstrip() for line in lines)
    words = set(done.stdout.split())
    described = {word for spec in registered().values() for s in spec.strategies for word in strategy_text(s).split()}
    assert described - words == set()


@pytest.mark.parametrize(
    "args, message",
    [
        (["compare", "--frameworks", "nosuch"], "unknown framework 'nosuch'"),
        (["compare", "--frameworks", "fake", "--model", "vgg"], "unknown model 'vgg'"),
        (["compare", "--frameworks", "fake", "--strategies", "warp"], "no strategy 'warp'"),
        (["compare", "--frameworks", "fake", "--gpus", "0"], "--gpus must be at least 1"),
        (["compare", "--frameworks", "fake", "--gpus", "4096"], "--gpus 4096 asked for, but only"),
        (["compare", "--frameworks", "fake", "--gpus", "two"], "--gpus takes a number"),
        (["compare", "--frameworks", "fake", "--gpus", "1,,2"], "--gpus '1,,2' has an empty item"),
        (["compare", "--frameworks", "fake", "--gpus", "1,2,"], "--gpus '1,2,' has an empty item"),
        (["compare", "--frameworks", "fake", "--gpus", ","], "--gpus is empty"),
        (["compare", "--frameworks", "fake", "--precision", "fp8"], "invalid choice: 'fp8'"),
        (["compare", "--frameworks", "fake", "--batch-per-gpu", "0"], "batch per device must be at least 1"),
        (["compare", "--frameworks", "fake", "--dataset", "imagenet:/nonexistent"], "unknown dataset"),
        (
            ["compare", "--frameworks", "fake", "--gpus", "1,2", "--scaling", "strong", "--batch-per-gpu", "3"],
            "does not split over 2 devices",
        ),
        (["compare", "--frameworks", "fake", "--out", "/proc/mgbench-out"], "cannot write to run folder"),
        (["run", "--framework", "nosuch"], "unknown framework 'nosuch'"),
        (["setup", "nosuch"], "unknown framework 'nosuch'"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
    ],
)
def test_bad_input_is_one_clear_line_and_exit_2(args, message):
    done = mgbench(*args)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("mgbench: error: ") and message in lines[0]


def test_more_gpus_than_cpus_names_the_capacity():
    done = mgbench("compare", "--frameworks", "fake", "--device", "cpu", "--gpus", str((os.cpu_count() or 1) + 1))
    assert done.returncode == 2
    assert f"only {os.cpu_count()} CPU cores" in done.stderr


@pytest.mark.parametrize("text, counts", [("4", [1, 4]), ("1", [1]), ("1,1", [1]), ("2,1,2,4", [2, 1, 4])])
def test_device_counts_run_each_count_once(text, counts):
    from mgbench.cli.options import parse_device_counts

    assert parse_device_counts(text) == counts


@pytest.mark.parametrize(
    "plugins, message",
    [
        ("nosuchplugin", "MGBENCH_PLUGINS names 'nosuchplugin', which cannot be imported: ModuleNotFoundError"),
        ("fakefw,raisingplugin", "names 'raisingplugin', which cannot be imported: RuntimeError: broken at import"),
        ("emptyplugin", "MGBENCH_PLUGINS names 'emptyplugin', which defines no FRAMEWORK"),
        ("fakefw,exitingplugin", "names 'exitingplugin', which cannot be imported: SystemExit: 0"),
    ],
)
def test_a_broken_plugin_is_one_line_for_every_verb(tmp_path, monkeypatch, capsys, plugins, message):
    from mgbench.cli import main

    (tmp_path / "raisingplugin.py").write_text("raise RuntimeError('broken at import')\n")
    (tmp_path / "emptyplugin.py").write_text("")
    (tmp_path / "exitingplugin.py").write_text("raise SystemExit(0)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("MGBENCH_PLUGINS", plugins)
    for args in (["list"], ["compare", "--frameworks", "pytorch"], ["run", "--compile", "default"]):
        assert exit_code(main, args) == 2, args
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("mgbench: error: ") and message in lines[0], lines


def compare_option_table() -> set[str]:
    """The options docs/options.md's `compare` option table names in its first column."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / "options.md").read_text()
    table = text.split("`compare` options:", 1)[1].split("\n\n", 2)[1]
    return {
        option
        for line in table.splitlines()[2:]
        for option in re.findall(r"--[a-z][a-z-]*", re.split(r"(?<!\\)\|", line)[1])
    }


def test_the_documented_option_table_matches_the_compare_parser():
    from mgbench.cli import build_parser

    verbs = next(action for action in build_parser()._actions if action.dest == "verb")
    compare = verbs.choices["compare"]
    options = {option for action in compare._actions for option in action.option_strings if option.startswith("--")}
    assert compare_option_table() == options - {"--help"}


def test_every_verb_and_every_option_of_every_verb_says_what_it_does():
    """`mgbench VERB --help` shows a line for each option: none is listed bare, with its name only."""
    import argparse

    from mgbench.cli import build_parser

    verbs = next(action for action in build_parser()._actions if action.dest == "verb")
    bare = [verb.dest for verb in verbs._choices_actions if not verb.help]
    for name, parser in verbs.choices.items():
        bare += [
            f"{name} {'/'.join(action.option_strings) or action.dest}"
            for action in parser._actions
            if not action.help or action.help == argparse.SUPPRESS
        ]
    assert bare == []


@pytest.mark.parametrize(
    "args, message",
    [
        (["compar"], "argument VERB: invalid choice: 'compar' (did you mean 'compare'?); choose from compare, run,"),
        (["compare", "--frameworks", "pytroch"], "unknown framework 'pytroch' (did you mean 'pytorch'?); known"),
        (
            ["compare", "--frameworks", "kears"],
            "unknown framework 'kears' (did you mean 'keras' or 'keras-tf'?); known",
        ),
        (
            ["compare", "--frameworks", "fake", "--model", "resnet5"],
            "unknown model 'resnet5' (did you mean 'resnet50'?)",
        ),
        (["compare", "--frameworks", "fake", "--strategies", "stedy"], "no strategy 'stedy' (did you mean 'steady'?)"),
        (["run", "--framework", "pytorch", "--strategy", "dpp"], "no strategy 'dpp' (did you mean 'dp' or 'ddp'?)"),
        (["compare", "--frameworks", "fake", "--precision", "bf61"], "'bf61' (did you mean 'bf16'?); choose from fp32"),
        (["setup", "keras-jaxx"], "unknown framework 'keras-jaxx' (nor an environment) (did you mean 'keras-jax'"),
        (["compare", "--frameworks", "zzz"], "unknown framework 'zzz'; known frameworks: pytorch,"),
    ],
)
def test_a_mistyped_name_is_one_line_offering_the_name_it_is_close_to(
    fake_plugin, tmp_path, monkeypatch, capsys, args, message
):
    """A verb, framework (or family), model, strategy, choice or environment that is a letter off
    a known one is refused naming it (one or two of the closest); a name near none lists them all."""
    from mgbench.cli import main

    monkeypatch.chdir(tmp_path)
    assert exit_code(main, args) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mgbench: error: ") and message in lines[0], lines
    assert list(tmp_path.iterdir()) == []


def test_version_and_a_bare_mgbench_show_what_there_is():
    from mgbench import __version__

    assert mgbench("--version").stdout.strip() == f"mgbench {__version__}"
    bare = mgbench()
    assert bare.returncode == 2
    for verb in ("compare", "report", "list", "setup"):
        assert verb in bare.stderr
    assert "examples:" in mgbench("--help").stdout


def test_run_says_what_reading_its_dataset_decided_as_compare_does(tmp_path):
    """An empty `labels:` cell reads as negative for every label: `run` says so, one line naming
    the images, before its row (here `unsupported`: the fake framework trains on synthetic data)."""
    import numpy as np
    from PIL import Image

    for index in range(4):
        Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(tmp_path / f"{index}.png")
    (tmp_path / "labels.csv").write_text("file,labels\n0.png,cat\n1.png,\n2.png,dog\n3.png,cat|dog\n")
    job = ["--framework", "fake", "--strategy", "steady", "--model", "tiny", "--batch-per-gpu", "1"]
    done = mgbench("run", *job, "--dataset", f"labels:{tmp_path}", "--out", str(tmp_path / "out"))
    assert "unsupported" in done.stdout, done.stderr
    notes = [line for line in done.stderr.splitlines() if "without labels" in line]
    assert notes == [
        f"{tmp_path / 'labels.csv'}: 1 image(s) without labels, read as negative for every label: labels.csv line 3 (1.png)"
    ]


def test_a_plugin_strategy_naming_no_launcher_is_refused_at_planning(tmp_path, monkeypatch, capsys):
    """A plugin's spec can name any launcher: one it lacks is one line and exit 2 when the runs
    are planned, before the compare starts its other frameworks' runs (the folder is not made)."""
    from conftest import tiny_job

    from mgbench.cli import main

    (tmp_path / "oddplugin.py").write_text(
        "from dataclasses import replace\n"
        "from fakefw import FRAMEWORK as FAKE\n"
        "from mgbench.frameworks.specs import StrategySpec\n"
        "FRAMEWORK = replace(FAKE, name='odd', strategies=(StrategySpec('teleport', 'teleporter', 'no such launcher'),))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("MGBENCH_PLUGINS", "fakefw,oddplugin")
    out = tmp_path / "out"
    compare = ["compare", "--frameworks", "fake,odd", "--gpus", "1", *tiny_job(4), "--out", str(out)]
    for args in (compare, ["run", "--framework", "odd", *tiny_job(4), "--out", str(tmp_path / "run")]):
        assert exit_code(main, args) == 2, args
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("mgbench: error: odd teleport: no launcher 'teleporter'"), lines
    assert not out.exists()
