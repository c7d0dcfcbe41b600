"""benchmarks/plain_gpt2.py: the plain GPT-2 loop the PyTorch adapter's tokens/s is measured against."""

import json

import pytest
from conftest import benchmark_script

from mgbench.core.gpt2 import GPT2_SHAPES
from mgbench.core.models import model_spec

TINY = ["--model", "gpt2-tiny", "--device", "cpu", "--batch", "4", "--seq-len", "32"]


@pytest.fixture(scope="module")
def plain_gpt2():
    return benchmark_script("plain_gpt2")


def test_the_record_counts_the_timed_steps_tokens_and_the_shapes_work(plain_gpt2, tmp_path, capsys):
    out = tmp_path / "lm" / "plain.jsonl"
    record = plain_gpt2.main([*TINY, "--steps", "2", "--warmup", "1", "--precision", "fp32", "--out", str(out)])
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(record))
    assert record["tokens_per_sec"] > 0
    assert record["tokens_per_sec"] * record["seconds"] == pytest.approx(2 * 4 * 32, rel=1e-6)
    assert record["flops_per_token"] == GPT2_SHAPES["gpt2-tiny"].flops_per_token(32)
    assert record["achieved_tflops"] == pytest.approx(record["flops_per_token"] * record["tokens_per_sec"] / 1e12)
    assert record["mfu"] is None and record["peak_memory_allocated_bytes"] is None
    assert (record["model"], record["batch"], record["seq_len"], record["compiled"]) == ("gpt2-tiny", 4, 32, False)
    declared = model_spec("gpt2-tiny").optimization
    assert (record["optimizer"], record["learning_rate"]) == (declared.record()["optimizer"], declared.learning_rate)
    plain_gpt2.main([*TINY, "--steps", "1", "--warmup", "1", "--precision", "fp32", "--out", str(out)])
    assert [json.loads(line)["steps"] for line in out.read_text().splitlines()] == [2, 1]


def test_the_loop_trains_its_repeated_batch_under_bf16_autocast(plain_gpt2):
    record = plain_gpt2.main([*TINY, "--steps", "20", "--warmup", "1"])
    assert record["precision"] == "bf16"
    assert record["last_loss"] < record["first_loss"] - 0.3


def test_sequences_longer_than_the_context_are_refused(plain_gpt2, capsys):
    with pytest.raises(SystemExit) as exit:
        plain_gpt2.main([*TINY, "--seq-len", "65"])
    assert exit.value.code == 2
    assert "not 65" in capsys.readouterr().err
