"""One rate, samples per second, shown in the unit the model declares: an image compare's tables
read img/s as they always have; a language model's read tokens/s (a sample is `seq_len` tokens),
with its rate per GPU and its MFU, and say what FLOPs the MFU counts."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from conftest import append_result, mgbench
from rich.console import Console
from test_compact import headline_rows

from mgbench.cli.live import RunLog, ending
from mgbench.core.config import RunConfig
from mgbench.core.inputs import IMAGES
from mgbench.core.models import model_spec
from mgbench.core.units import rate_unit
from mgbench.measure.timing import summarise_steps
from mgbench.projection.calibration import PROJECTION_FILE, WRITTEN_BY, read_projection
from mgbench.records.results import RunResult
from mgbench.reports.compact import compact_summary, markdown, print_compact
from mgbench.reports.projection_table import projection_columns, series_rows
from mgbench.reports.readings import limits_details
from mgbench.reports.summary import markdown_summary, results_frame
from mgbench.reports.units import frame_unit
from mgbench.reports.verdict import verdict

SEQ_LEN = 32
RATES = {1: 100.0, 2: 190.0}
"""Samples (sequences of `SEQ_LEN` tokens) per second on 1 and 2 GPUs."""
MFU = {1: 0.25, 2: 0.24}


def language_model_rows() -> list[RunResult]:
    """gpt2-tiny at 32 tokens on 1 and 2 GPUs, steady steps, with their share of a vendor peak."""
    rows = []
    for devices, rate in RATES.items():
        config = RunConfig.flat(
            "pytorch", "ddp", "gpt2-tiny", devices, "cuda", 8, 20, seq_len=SEQ_LEN, precision="bf16"
        )
        stats = summarise_steps([config.global_batch / rate] * 20, [0.0] * 20, config.global_batch)
        flops = model_spec("gpt2-tiny").language_model.flops_per_token(SEQ_LEN) * SEQ_LEN
        rows.append(
            RunResult.flat(
                config,
                "ok",
                **vars(stats),
                flops_per_sample=flops,
                achieved_tflops=flops * rate / 1e12,
                peak_tflops=989.5,
                peak_source="vendor: NVIDIA H100 SXM",
                peak_fraction=MFU[devices],
            )
        )
    return rows


def test_the_unit_is_the_models_at_the_rows_sequence_length_and_images_where_the_model_is_unknown():
    assert rate_unit("resnet50") == IMAGES and (IMAGES.label, IMAGES.heading) == ("img/s", "images/sec")
    assert (rate_unit("gpt2").label, rate_unit("gpt2").per_sample) == ("tokens/s", 1024)
    assert rate_unit("gpt2", 256.0).of(10.0) == 2560.0 and rate_unit("gpt2", float("nan")).per_sample == 1024
    assert rate_unit("a-plugin-model-not-loaded", 64) == IMAGES
    assert frame_unit(results_frame(headline_rows())) == IMAGES


def test_a_language_models_compact_table_shows_tokens_per_second_per_gpu_and_mfu():
    frame = results_frame(language_model_rows())
    summary = compact_summary(frame, "gpt2-tiny")
    headers = {column.key: column.header for column in summary.columns}
    assert headers["rate_2"] == "2 GPU\ntokens/s" and headers["per_device_2"] == "2 GPU\ntokens/s per GPU"
    assert headers["mfu_2"] == "2 GPU\nMFU"
    cells = summary.cells.iloc[0]
    assert (cells["rate_1"], cells["rate_2"], cells["range"]) == ("3,200", "6,080", "6,019-6,141")
    assert (cells["per_device_1"], cells["per_device_2"]) == ("3,200", "3,040")
    assert (cells["mfu_1"], cells["mfu_2"]) == ("25%", "24%")
    assert "6,080 tokens/s [6,019-6,141]" in verdict(summary)
    # The line keeps the rate as the rows do, per sample: a script reads the same figure in every unit.
    assert summary.lines.loc[0, "samples_per_sec_2dev"] == pytest.approx(RATES[2])
    per_token = model_spec("gpt2-tiny").language_model.flops_per_token(SEQ_LEN)
    assert summary.mfu.startswith(f"MFU: 6N + 12·L·d·T FLOPs per token = {per_token:,} for gpt2-tiny at 32 tokens")
    assert summary.mfu.endswith("over the dense bf16 peak of each device (989.5 TFLOP/s, vendor: NVIDIA H100 SXM).")
    buffer = io.StringIO()
    print_compact(summary, Console(file=buffer, width=200, color_system=None))
    assert summary.mfu in buffer.getvalue() and summary.mfu in markdown(summary)


def test_an_image_compact_table_keeps_its_img_per_second_and_says_nothing_of_mfu():
    summary = compact_summary(results_frame(headline_rows()), "densenet121")
    headers = [column.header for column in summary.columns]
    assert "2 GPU\nimg/s" in headers and not [header for header in headers if "MFU" in header or "per GPU" in header]
    assert summary.mfu is None and "MFU" not in markdown(summary)


def test_summary_md_of_a_language_model_heads_its_rates_in_tokens_and_says_what_its_mfu_counts():
    text = markdown_summary(results_frame(language_model_rows()))
    header = [cell.strip() for cell in text.splitlines()[0].split("|")]
    assert "tokens/s" in header and "tokens/s per GPU" in header and "MFU" in header and "images/sec" not in header
    second = [cell.strip() for cell in text.splitlines()[3].split("|")]
    assert second[header.index("tokens/s")] == "6,080" and second[header.index("tokens/s per GPU")] == "3,040"
    assert second[header.index("MFU")] == "24%" and second[header.index("p10-p90")] == "6080-6080"
    assert "\nMFU: 6N + 12·L·d·T FLOPs per token" in text
    image = markdown_summary(results_frame(headline_rows()))
    assert "images/sec" in image.splitlines()[0] and "MFU" not in image


def test_a_language_models_work_is_per_token_and_its_share_of_the_peak_its_mfu():
    row = results_frame(language_model_rows()).iloc[1]
    per_token = model_spec("gpt2-tiny").language_model.flops_per_token(SEQ_LEN)
    work = dict(limits_details(row))["work"]
    assert work.startswith(f"{per_token / 1e6:.1f} MFLOP per token, ") and ", MFU 24% of 990 TFLOP/s (vendor" in work


def test_diff_and_the_live_lines_show_a_language_models_rate_in_tokens(tmp_path):
    folder = tmp_path / "run"
    for row in language_model_rows():
        append_result(folder / "results.jsonl", row)
    done = mgbench("diff", str(folder), str(folder), "--format", "md")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("| run | OLD tokens/s (spread) | NEW tokens/s (spread) | change |")
    assert "| 6,080.0 (6,019-6,141) |" in done.stdout
    assert json.loads(mgbench("diff", str(folder), str(folder), "--format", "json").stdout)["rate_unit"] == {
        "label": "tokens/s",
        "per_sample": SEQ_LEN,
    }
    assert ending(language_model_rows()[1], 2.0) == "ok pytorch ddp x2: 6080.0 tokens/s, 2.0 s"
    log = tmp_path / "run.log"
    log.write_text("step 2/20: 5012.5 tokens/s (host clock)\nstep 4/20: 75.1 img/s (host clock)\n")
    step = RunLog(log).read().step
    assert step is not None and (step.done, step.text) == (4, "75.1 img/s")
    log.write_text("step 2/20: 5012.5 tokens/s (host clock)\n")
    assert RunLog(log).read().step.text == "5012.5 tokens/s"


def test_a_projection_shows_its_rate_in_the_unit_and_an_earlier_ones_file_reads_under_the_new_names(tmp_path):
    point = {"devices": 2, "nodes": 1, "step_seconds": 0.1, "samples_per_sec": 100.0, "efficiency": 0.9}
    point |= {"unfitted_efficiency": 0.95, "epoch_seconds": 10.0, "limiter": "compute"}
    unit = rate_unit("gpt2-tiny", SEQ_LEN)
    assert projection_columns(unit)[3] == "tokens/s" and projection_columns()[3] == "images/sec"
    assert series_rows({"projection": [point]}, unit)[0][3] == "3200"
    assert series_rows({"projection": [point]})[0][3] == "100"
    earlier = {"written_by": WRITTEN_BY, "series": [{"curve": [{"devices": 1, "images_per_sec": 5.0}]}]}
    earlier["series"][0]["inputs"] = {"input": {"kind": "limit", "images_per_sec_per_node": 3.0}}
    (Path(tmp_path) / PROJECTION_FILE).write_text(json.dumps(earlier))
    read = read_projection(tmp_path)
    assert read["series"][0]["curve"] == [{"devices": 1, "samples_per_sec": 5.0}]
    assert read["series"][0]["inputs"]["input"] == {"kind": "limit", "samples_per_sec_per_node": 3.0}
