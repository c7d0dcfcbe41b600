"""Nothing lost, nothing silently wrong: what `prepare`, `make-sample-chestxray` and the dataset
check do with destinations that hold other data, odd pixels, bad input and Ctrl-C."""

import pytest

from conftest import mgbench
from mgbench.cli import main
from mgbench.datasets.chestxray import LABEL_FILE
from test_datasets import nih_rows, write_nih


def one_error_line(capsys: pytest.CaptureFixture, args: list[str], message: str) -> None:
    """`mgbench ARGS` exits 2 with one line `mgbench: error: ...` holding `message`."""
    assert main(args) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mgbench: error: ") and message in lines[0], lines


@pytest.mark.parametrize(
    "args, message",
    [
        (["prepare", "chestxray", "{empty}", "{tmp}/dst"], "cannot read label file"),
    ],
)
def test_bad_input_is_one_line_not_a_traceback(tmp_path, capsys, args, message):
    write_nih(tmp_path / "src", nih_rows(6))
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / LABEL_FILE).write_text("")
    (tmp_path / "file").write_text("a file")
    paths = {"empty": tmp_path / "empty", "src": tmp_path / "src", "file": tmp_path / "file", "tmp": tmp_path}
    one_error_line(capsys, [arg.format(**paths) for arg in args], message)
    assert not (tmp_path / "dst").exists()


def test_compare_names_an_empty_label_file_in_one_line(tmp_path):
    (tmp_path / LABEL_FILE).write_text("")
    done = mgbench("compare", "--frameworks", "fake", "--dataset", f"chestxray:{tmp_path}", "--out", str(tmp_path / "out"))
    assert done.returncode == 2 and done.stderr.startswith("mgbench: error: cannot read label file"), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1

