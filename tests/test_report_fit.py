"""What a row and a report say without being read twice: every ok CPU row names its bottleneck
and the clock it came from in results.jsonl; the report's "Every run" table keeps the columns a
reader compares and leaves the rest to each run's details; the throughput chart says what its bar
and whiskers are."""

from __future__ import annotations

import pandas as pd
from conftest import mgbench, tiny_job
from test_reports import BASE, ok_result

from mgbench.common.breakdown import CATEGORIES, host_bottleneck
from mgbench.common.breakdown_record import HOST_CLOCK, attach_host_bottleneck
from mgbench.common.timing import HOST_PHASES

INPUT_BOUND = {"input_wait": 0.31, "step": 0.66, "synchronize": 0.0, "loss_read": 0.03}
STEP_BOUND = {"input_wait": 0.02, "step": 0.95, "synchronize": 0.0, "loss_read": 0.03}


def test_a_cpu_compare_writes_each_ok_rows_bottleneck_and_its_clock_into_results_jsonl(tmp_path):
    """CPU devices take no profile by default: the row itself names its bottleneck from its host
    timing, so pandas reading results.jsonl sees what the report's tables say."""
    out = tmp_path / "compare"
    done = mgbench(
        "compare", "--frameworks", "fake", "--strategies", "steady", "--gpus", "2", *tiny_job(12), "--out", str(out)
    )
    assert done.returncode == 0, done.stderr
    rows = pd.read_json(out / "results.jsonl", lines=True)
    assert len(rows) == 2 and (rows["status"] == "ok").all() and (rows["device_kind"] == "cpu").all()
    assert rows["breakdown"].isna().all()
    assert (rows["breakdown_clock"] == HOST_CLOCK).all()
    assert list(rows["bottleneck"]) == [host_bottleneck(shares) for shares in rows["host_breakdown"]]
    assert rows["bottleneck"].isin(HOST_PHASES).all()


def test_the_host_clock_names_a_bottleneck_only_where_no_profile_or_device_does():
    cpu = BASE.with_changes(device_kind="cpu")
    unprofiled = ok_result(cpu, 0.2)
    unprofiled.host_breakdown = INPUT_BOUND
    attach_host_bottleneck(unprofiled)
    assert (unprofiled.bottleneck, unprofiled.breakdown_clock) == ("input_wait", HOST_CLOCK)
    step_bound = ok_result(cpu, 0.2)
    step_bound.host_breakdown = STEP_BOUND
    attach_host_bottleneck(step_bound)
    assert step_bound.bottleneck == "step"

    profiled = ok_result(cpu, 0.2)
    profiled.host_breakdown = INPUT_BOUND
    profiled.breakdown = dict(zip(CATEGORIES, (0.05, 0.0, 0.55, 0.0, 0.40), strict=True))
    profiled.bottleneck, profiled.breakdown_clock = "idle", "cpu"
    gpu = ok_result(BASE, 0.2)  # a GPU step's host timing is of its launches
    gpu.host_breakdown = INPUT_BOUND
    nulled = ok_result(cpu, 0.2)  # a share written as null: no split rather than half of one
    nulled.host_breakdown = {**INPUT_BOUND, "synchronize": None}
    for row, expected in ((profiled, ("idle", "cpu")), (gpu, (None, None)), (nulled, (None, None))):
        attach_host_bottleneck(row)
        assert (row.bottleneck, row.breakdown_clock) == expected
