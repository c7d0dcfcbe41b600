"""A language model's rows show each GPU's peak memory allocated and reserved and the largest batch
per GPU that fits (modelled: `records.largest_batch`) in the compact table, summary.md, the HTML
run details and `diff`; an image compare's compact table and diff table show none of them."""

from __future__ import annotations

import io
import json

from conftest import mgbench
from rich.console import Console
from test_compact import headline_rows
from test_rate_units import language_model_rows

from mgbench.records.finished import finished_rows, write_results
from mgbench.reports.compact import compact_summary, markdown, print_compact
from mgbench.reports.readings import limits_details
from mgbench.reports.summary import markdown_summary, results_frame
from mgbench.reports.units import LARGEST_BATCH_SENTENCE

GIB, MIB = 2**30, 2**20
PEAKS = {1: (1.5 * GIB, 2 * GIB), 2: (1.25 * GIB, 1.75 * GIB)}
"""Peak allocated and reserved per GPU at 1 and 2 GPUs (a sharded strategy holds less on each)."""
ACTIVATIONS = GIB // 2
"""The activation estimate of the rows' batch of 8: 64 MiB a sample."""


def memory_rows():
    """The language model's rows with their memory, on 80 GiB GPUs, finished as a results file's
    are: 1 GPU: (80 - 1) GiB over 64 MiB = 1264; 2 GPUs: (80 - 0.75) GiB over 64 MiB = 1268."""
    rows = language_model_rows()
    for row in rows:
        row.peak_memory_bytes, row.peak_memory_reserved_bytes = (int(v) for v in PEAKS[row.config.devices])
        row.limit.activation_bytes_estimate = ACTIVATIONS
        row.origin.environment = {"gpus": [{"name": "NVIDIA H100", "memory_total_mib": 80 * 1024}] * 2}
    return finished_rows([[row] for row in rows])


def test_the_rows_model_their_largest_batch_from_their_peak():
    assert [row.limit.largest_batch_estimate for row in memory_rows()] == [1264, 1268]


def test_a_language_models_compact_table_shows_peak_reserved_and_the_largest_batch_per_gpu():
    summary = compact_summary(results_frame(memory_rows()), "gpt2-tiny")
    headers = {column.key: column.header for column in summary.columns}
    assert headers["peak_memory_2"] == "2 GPU\npeak GiB/GPU" and headers["reserved_2"] == "2 GPU\nreserved GiB/GPU"
    assert headers["largest_batch_2"] == "2 GPU\nmax batch/GPU (est.)"
    cells = summary.cells.iloc[0]
    assert (cells["peak_memory_1"], cells["reserved_1"], cells["largest_batch_1"]) == ("1.50", "2.00", "1264")
    assert (cells["peak_memory_2"], cells["reserved_2"], cells["largest_batch_2"]) == ("1.25", "1.75", "1268")
    assert summary.mfu.endswith(LARGEST_BATCH_SENTENCE) and LARGEST_BATCH_SENTENCE in markdown(summary)
    buffer = io.StringIO()
    print_compact(summary, Console(file=buffer, width=400, color_system=None))
    printed = buffer.getvalue()
    assert "max batch/GPU" in printed and "modelled, not measured" in printed


def test_summary_md_has_the_reserved_memory_and_the_largest_batch():
    text = markdown_summary(results_frame(memory_rows()))
    header = [cell.strip() for cell in text.splitlines()[0].split("|")]
    second = [cell.strip() for cell in text.splitlines()[3].split("|")]
    assert second[header.index("peak mem GiB")] == "1.25" and second[header.index("reserved mem GiB")] == "1.75"
    assert second[header.index("max batch per GPU (est.)")] == "1268"
    assert LARGEST_BATCH_SENTENCE in text


def test_the_run_details_name_what_the_largest_batch_stands_on():
    details = dict(limits_details(results_frame(memory_rows()).iloc[0]))
    assert details["largest batch per GPU (estimate)"] == (
        "1264: linear in the batch from the peak allocated at 8 per GPU (1.50 GiB) and the activation "
        "estimate (64.0 MiB a sample), in 80.0 GiB"
    )


def test_an_image_compact_table_shows_no_memory_columns():
    rows = headline_rows()
    for row in rows:
        row.peak_memory_reserved_bytes = 3 * GIB
    summary = compact_summary(results_frame(rows), "densenet121")
    assert not [c for c in summary.columns if "GiB" in c.header or "batch" in c.header]
    assert summary.mfu is None


def test_diff_shows_each_sides_memory_for_a_language_model_and_none_for_images(tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    write_results(old / "results.jsonl", [[row] for row in memory_rows()])
    shrunk = memory_rows()
    shrunk[1].peak_memory_bytes = GIB
    write_results(new / "results.jsonl", [[row] for row in shrunk])
    done = mgbench("diff", str(old), str(new), "--format", "md")
    assert done.returncode == 0, done.stderr
    header, _, _, second = done.stdout.splitlines()[:4]
    columns = [cell.strip() for cell in header.split("|")]
    cells = dict(zip(columns, (cell.strip() for cell in second.split("|")), strict=True))
    assert (
        cells["OLD peak/reserved GiB per GPU"] == "1.25/1.75" and cells["NEW peak/reserved GiB per GPU"] == "1.00/1.75"
    )
    # 0.25 GiB less fixed: 4 more samples of 64 MiB.
    assert (cells["OLD max batch per GPU (est.)"], cells["NEW max batch per GPU (est.)"]) == ("1268", "1272")
    runs = json.loads(mgbench("diff", str(old), str(new), "--format", "json").stdout)["runs"]
    assert runs[1]["new_peak_memory_bytes"] == GIB and runs[1]["old_largest_batch_estimate"] == 1268
    images = tmp_path / "images"
    write_results(images / "results.jsonl", [[row] for row in headline_rows()])
    image = mgbench("diff", str(images), str(images), "--format", "md")
    assert "GiB" not in image.stdout.splitlines()[0] and "batch" not in image.stdout.splitlines()[0]
