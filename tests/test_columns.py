"""`Col` names the results frame's columns once: each member is a column the frame really has."""

import pytest

from mgbench.core.config import RunConfig
from mgbench.records.results import RunResult
from mgbench.reports.columns import Col
from mgbench.reports.summary import results_frame


def _frame():
    config = RunConfig.flat("pytorch", "ddp", "resnet50", 1, "cpu", 8, 10, data_format="channels_first")
    return results_frame([RunResult(config, "ok")])


def test_every_member_is_a_column_of_the_results_frame():
    columns = set(_frame().columns)
    assert [member for member in Col if member not in columns] == []


def test_a_member_reads_the_frame_and_is_its_string_on_disk():
    row = _frame().iloc[0]
    assert row[Col.FRAMEWORK] == "pytorch" and row[Col.DEVICES] == 1
    assert Col.SAMPLES_PER_SEC == "samples_per_sec" and f"{Col.SAMPLES_PER_SEC}" == "samples_per_sec"


def test_a_misspelled_column_fails_where_it_is_written():
    with pytest.raises(AttributeError):
        Col.SAMPLES_PER_SEK  # noqa: B018
