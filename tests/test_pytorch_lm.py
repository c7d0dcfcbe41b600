"""The PyTorch adapter (and Horovod through it) trains GPT-2: a run of `gpt2-tiny` from the shared
start computes the plain loop's first loss, 2 processes step as 1 on the same global batch, a
prepared corpus trains in epochs and validates to a perplexity, the learning rate follows
warm-up and cosine in a `--steps` run, and a dataset of the other kind is refused in one line."""

from __future__ import annotations

import json
import math
import random
import time
from pathlib import Path

import pytest
import torch
from conftest import (
    assert_two_devices_equal_one,
    framework_python,
    max_difference,
    mgbench,
    one_line_error,
    saved_state,
)
from test_tokens import MERGES, write_bpe

from mgbench.core.config import RunConfig
from mgbench.core.gpt2 import GPT2_SHAPES
from mgbench.core.initial_weights import gpt2_reference_weights
from mgbench.core.models import model_spec
from mgbench.datasets.synthetic import Shard
from mgbench.datasets.tokens import synthetic_tokens
from mgbench.frameworks.pytorch.adapter import TorchAdapter
from mgbench.frameworks.pytorch.attention import UNFUSED, attention_kernel
from mgbench.frameworks.pytorch.gpt2 import GPT2LM, language_model_loss
from mgbench.frameworks.pytorch.strategies import TorchStrategy
from mgbench.frameworks.pytorch.weights import load_initial
from mgbench.frameworks.registry import framework_spec
from mgbench.training.driver import train_steps

TINY = GPT2_SHAPES["gpt2-tiny"]
LM = ("--model", "gpt2-tiny", "--device", "cpu")
WORDS = "to be or not that is the question whether tis nobler in mind suffer slings and arrows".split()


def run_row(out: Path, *options: str) -> dict:
    """The one row of `mgbench run --framework pytorch` with `options`, into `out`."""
    done = mgbench("run", "--framework", "pytorch", *options, "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    (row,) = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert row["status"] == "ok", row.get("error")
    return row


def test_a_run_starts_from_the_shared_draw_and_takes_the_plain_loops_first_loss(tmp_path):
    """The first step's loss is the plain model's on the run's first batch (the CPU job's 32 samples
    of 64 tokens, global batch 0), from `gpt2_reference_weights`: the adapter builds, loads and
    feeds exactly that."""
    row = run_row(tmp_path / "run", *LM, "--steps", "3")
    assert row["parameters"] == model_spec("gpt2-tiny").reference_parameters == TINY.parameters()
    weights = gpt2_reference_weights(TINY, seed=0)
    assert row["init_digest"] == weights.digest
    model = GPT2LM(TINY)
    load_initial(model, weights)
    inputs, targets = synthetic_tokens(TINY.vocabulary, TINY.context, 0, Shard(0, 32), seed=0)
    with torch.no_grad():
        first = float(language_model_loss(model(torch.from_numpy(inputs)), torch.from_numpy(targets)))
    assert row["step_losses"][0] == pytest.approx(first, rel=1e-5)
    assert row["eval_metrics"]["perplexity"] == pytest.approx(math.exp(row["eval_metrics"]["loss"]))
    assert row["attention_kernel"].startswith("torch SDPA: ")
    assert row["learning_rate"] == model_spec("gpt2-tiny").optimization.learning_rate


def test_the_attention_kernel_is_the_one_sdpa_runs_for_gpt2s_causal_attention():
    """Observed on causal attention of the run's shape: the CPU's flash kernel serves it in fp32,
    and where only the math backend is allowed, the unfused path is named."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    gpt2_tiny, cpu = model_spec("gpt2-tiny"), torch.device("cpu")
    assert attention_kernel(gpt2_tiny, 32, 2, cpu, torch.float32) == "torch SDPA: flash (CPU)"
    with sdpa_kernel([SDPBackend.MATH]):
        assert attention_kernel(gpt2_tiny, 32, 2, cpu, torch.float32) == f"torch SDPA: {UNFUSED}"


@pytest.mark.slow
def test_ddp_on_two_processes_steps_as_one_process_on_the_same_global_batch(tmp_path):
    assert_two_devices_equal_one(tmp_path, "pytorch", "ddp", 1e-6, model="gpt2-tiny")


def write_stream(folder: Path) -> Path:
    """A corpus of 4 documents of random lines of `WORDS` (about 3,700 tokens), prepared with a
    BPE of 265 tokens made here: no download."""
    rng = random.Random(0)
    corpus = folder / "corpus"
    corpus.mkdir(parents=True)
    for document in range(4):
        lines = (" ".join(rng.choice(WORDS) for _ in range(12)) + "." for _ in range(20))
        (corpus / f"{document}.txt").write_text("\n".join(lines) + "\n")
    bpe = write_bpe(folder / "bpe", MERGES)
    stream = folder / "stream"
    done = mgbench(
        "prepare", "tokens", str(stream), "--corpus", str(corpus), "--tokenizer", f"bpe:{bpe}",
        MGBENCH_WORK_CACHE=str(folder / "cache" / "work.json"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return stream


@pytest.mark.slow
def test_a_corpus_trains_two_epochs_and_validates_to_a_perplexity(tmp_path):
    """Each epoch reads the whole training split once (its tokens over a global batch's), the
    loss falls, each validation gives its loss and perplexity, and the test split, which a
    stream has none of, is the validation split scored by the last weights."""
    stream = write_stream(tmp_path)
    options = ("--dataset", f"tokens:{stream}", "--epochs", "2", "--batch-per-gpu", "8", "--seq-len", "32")
    row = run_row(tmp_path / "run", *LM, *options, "--workers", "1")
    train_tokens = json.loads((stream / "tokens.json").read_text())["tokens"]["train"]
    assert len(row["losses"]) == 2 * (train_tokens // (8 * 32))
    first, last = row["epoch_metrics"]
    for epoch in (first, last):
        assert epoch["val_perplexity"] == pytest.approx(math.exp(epoch["val_loss"]))
    assert last["val_loss"] < first["val_loss"] < math.log(TINY.vocabulary)
    assert row["test_metrics"] == {"loss": last["val_loss"], "perplexity": last["val_perplexity"]}
    assert row["loader"] == framework_spec("pytorch").capabilities.loader and row["decoder"] is None


def test_a_token_stream_is_refused_for_an_image_model_and_images_for_a_language_model(tmp_path):
    from mgbench.datasets.sample import make_sample

    stream = write_stream(tmp_path)
    refused = one_line_error(mgbench("run", "--model", "tiny", "--device", "cpu", "--dataset", f"tokens:{stream}"))
    assert "is a token stream, for a language model, and tiny trains on images" in refused
    make_sample(tmp_path / "images", 20, 32)
    refused = one_line_error(mgbench("run", *LM, "--dataset", f"chestxray:{tmp_path / 'images'}", "--epochs", "1"))
    assert "holds images, and gpt2-tiny trains on 64 tokens a sample" in refused


class RatesRecorded(TorchAdapter):
    """The PyTorch adapter in this process, recording each rate the driver sets."""

    def __init__(self) -> None:
        super().__init__("one-process", TorchStrategy())
        self.rates: list[float] = []

    def set_learning_rate(self, learning_rate: float) -> None:
        self.rates.append(learning_rate)
        super().set_learning_rate(learning_rate)


def test_a_steps_run_of_a_language_model_warms_up_then_decays_by_its_cosine():
    """WarmupCosine(20) at peak 6e-4 over a run of 23 timed steps after its compile step (24 in
    all, the compile step the schedule's step 0): step k of the warm-up at (k + 1)/20 of the peak,
    then the half cosine from the peak towards a tenth of it over the last 4; the optimizer steps at
    the last rate set."""
    config = RunConfig.flat("pytorch", "one-process", "gpt2-tiny", 1, "cpu", 2, 23, seq_len=8, learning_rate=6e-4)
    adapter = RatesRecorded()
    adapter.setup(config)
    train_steps(adapter, config, compiles=True, step_clock=time.perf_counter)
    adapter.close()
    peak, final = 6e-4, 6e-5
    warm_up = [peak * (step + 1) / 20 for step in range(20)]
    cosine = [final + (peak - final) * (1 + math.cos(math.pi * done / 4)) / 2 for done in range(4)]
    assert adapter.rates == pytest.approx(warm_up + cosine, rel=1e-12)
    assert adapter.optimizer.param_groups[0]["lr"] == adapter.rates[-1]


def test_a_steps_run_of_an_image_model_keeps_its_rate():
    """The linear scaling rule counts its warm-up in epochs: a `--steps` run trains at `--lr`."""
    config = RunConfig.flat("pytorch", "one-process", "tiny", 1, "cpu", 2, 3, learning_rate=0.05)
    adapter = RatesRecorded()
    adapter.setup(config)
    train_steps(adapter, config, compiles=False, step_clock=time.perf_counter)
    adapter.close()
    assert adapter.rates == [] and adapter.optimizer.param_groups[0]["lr"] == 0.05


@pytest.mark.slow
def test_horovod_on_two_processes_steps_as_one_and_as_pytorch(tmp_path):
    """Horovod trains the PyTorch adapter's GPT-2: 2 processes (gloo) as 1 on the same global batch,
    and 1 as PyTorch's ddp does."""
    framework_python("horovod")
    single = assert_two_devices_equal_one(tmp_path, "horovod", "hvd", 1e-6, model="gpt2-tiny")
    assert max_difference(single, saved_state(tmp_path, "pytorch", "ddp", 1, 8, 0.5, model="gpt2-tiny")) < 1e-6
