"""What a model declares it trains towards and steps with (`core.objective`, `core.optimization`),
and how frameworks, the driver's schedule, the registry and the rows read those declarations."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
import torch
from conftest import framework_python, mgbench, read_rows, run_in, tiny_job

from mgbench.core.errors import UsageError
from mgbench.core.inputs import ImageInput
from mgbench.core.job import Job
from mgbench.core.models import MODELS, ModelSpec
from mgbench.core.objective import (
    AUC,
    LANGUAGE_MODEL,
    LOSS,
    MULTI_LABEL_BCE,
    PERPLEXITY,
    SOFTMAX_CROSS_ENTROPY,
    TOP1,
    Metric,
)
from mgbench.core.optimization import IMAGE_SGD, SGD, AdamW, LinearScalingWarmup, Optimization, RatePlan, WarmupCosine
from mgbench.core.target import TargetMetric
from mgbench.frameworks.pytorch.models import build_optimizer
from mgbench.measure.metrics import split_metrics
from mgbench.runner.plan import plan_runs


def test_each_catalogue_model_declares_the_loss_metrics_and_optimizer_it_trains_with():
    """CheXNet's DenseNet is multi-label BCE judged by AUC, the classifiers softmax cross-entropy
    judged by AUC and top-1; every one steps heavy-ball SGD at momentum 0.9 without weight decay,
    with the linear scaling rule and a one-epoch warm-up, from 0.01. Every GPT-2 is judged by its
    next token's cross-entropy and perplexity and steps AdamW (beta2 0.95, decay 0.1) with a
    warm-up and a cosine decay, peaking at 6e-4."""
    image = {"densenet121", "resnet50", "inception_v3", "vit_b_16", "tiny"}
    language = {"gpt2", "gpt2-medium", "gpt2-xl", "gpt2-tiny"}
    assert set(MODELS) == image | language
    assert {name: MODELS[name].objective for name in image} == {
        "densenet121": MULTI_LABEL_BCE,
        "resnet50": SOFTMAX_CROSS_ENTROPY,
        "inception_v3": SOFTMAX_CROSS_ENTROPY,
        "vit_b_16": SOFTMAX_CROSS_ENTROPY,
        "tiny": SOFTMAX_CROSS_ENTROPY,
    }
    assert (MULTI_LABEL_BCE.loss, MULTI_LABEL_BCE.metrics) == ("sigmoid", (AUC,))
    assert (SOFTMAX_CROSS_ENTROPY.loss, SOFTMAX_CROSS_ENTROPY.metrics) == ("softmax", (AUC, TOP1))
    assert (LANGUAGE_MODEL.loss, LANGUAGE_MODEL.metrics) == ("next_token", (LOSS, PERPLEXITY))
    assert not PERPLEXITY.higher_is_better and PERPLEXITY.reached(20.0, 25.0) and not PERPLEXITY.reached(30.0, 25.0)
    for name in image:
        assert MODELS[name].optimization.learning_rate == 0.01
        assert MODELS[name].optimization.record() == {
            "optimizer": {"kind": "sgd", "momentum": 0.9, "nesterov": False, "weight_decay": 0.0},
            "schedule": {"kind": "linear_scaling_warmup", "warmup_epochs": 1},
        }
    for name in language:
        assert MODELS[name].objective == LANGUAGE_MODEL
        assert MODELS[name].optimization.learning_rate == 6e-4
        assert MODELS[name].optimization.record() == {
            "optimizer": {"kind": "adamw", "betas": (0.9, 0.95), "eps": 1e-8, "weight_decay": 0.1},
            "schedule": {"kind": "warmup_cosine", "warmup_steps": 20, "final_share": 0.1},
        }


def test_a_model_given_a_loss_name_for_its_objective_is_one_usage_error():
    with pytest.raises(UsageError, match="model net: declare its objective"):
        ModelSpec("net", ImageInput(16), 3, "softmax", "a net", 12, 2, optimization=IMAGE_SGD)


def rates(base_lr: float, global_batch: int, per_epoch: int = 10, total: int = 100) -> RatePlan:
    return RatePlan(base_lr, global_batch, reference_batch=256, steps_per_epoch=per_epoch, total_steps=total)


def test_linear_scaling_rule_ramps_from_the_given_rate_over_an_epoch_then_holds():
    schedule = LinearScalingWarmup(warmup_epochs=1)
    assert schedule.rate_at(0, rates(0.1, 1024)) == pytest.approx(0.1)
    assert schedule.rate_at(5, rates(0.1, 1024)) == pytest.approx(0.25)
    assert schedule.rate_at(10, rates(0.1, 1024)) == pytest.approx(0.4)
    assert schedule.rate_at(99, rates(0.1, 128)) == pytest.approx(0.05)


def test_warmup_cosine_climbs_to_the_given_rate_then_falls_by_half_a_cosine_to_its_floor():
    """Peak 0.5 (not scaled by the batch), 4 warm-up steps, 14 in all, a floor of a tenth: the
    cosine's halfway step (9) is halfway between 0.5 and 0.05."""
    schedule, plan = WarmupCosine(warmup_steps=4, final_share=0.1), rates(0.5, 1024, total=14)
    expected = {
        0: 0.125,
        1: 0.25,
        3: 0.5,
        4: 0.5,
        6: 0.05 + 0.45 * 0.5 * (1 + math.cos(math.pi * 0.2)),
        9: 0.275,
        14: 0.05,
        20: 0.05,
    }
    assert {step: schedule.rate_at(step, plan) for step in expected} == pytest.approx(expected)


def test_a_metric_is_reached_in_its_direction_and_a_target_only_where_the_objective_gives_it():
    assert AUC.reached(0.8, 0.8) and not AUC.reached(0.79, 0.8) and not AUC.reached(math.nan, 0.8)
    perplexity = Metric("perplexity", "perplexity", higher_is_better=False, levels=PERPLEXITY.levels)
    assert perplexity.reached(20.0, 25.0) and not perplexity.reached(30.0, 25.0)
    assert not perplexity.reached(math.nan, 25.0)
    TargetMetric.parse("top1=0.5").check_given(SOFTMAX_CROSS_ENTROPY)
    with pytest.raises(UsageError, match="top1: the validation of this multi-label dataset gives auc"):
        TargetMetric.parse("top1=0.5").check_given(MULTI_LABEL_BCE)


def test_a_validation_reports_the_metrics_of_its_labels_objective():
    targets, scores = np.array([0, 1, 1]), np.array([[0.8, 0.2], [0.3, 0.7], [0.6, 0.4]])
    assert split_metrics(targets, scores, multi_label=False) == pytest.approx({"auc": 1.0, "top1": 2 / 3})
    assert list(split_metrics(np.eye(2)[targets], scores, multi_label=True)) == ["auc"]


ADAMW_COSINE = Optimization(
    AdamW(betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1), WarmupCosine(warmup_steps=2), learning_rate=0.01
)


def test_frameworks_that_cannot_step_a_declared_optimizer_get_unsupported_rows_before_launching(monkeypatch):
    """A model declaring AdamW: the torch-stepped frameworks build torch.optim.AdamW, the Keras
    family Keras' AdamW in torch's form, and every other framework's row is `unsupported`, saying
    which optimizer and what it builds."""
    monkeypatch.setitem(MODELS, "tiny", dataclasses.replace(MODELS["tiny"], optimization=ADAMW_COSINE))
    job = Job("tiny", "cpu", 2, 4, data_format="channels_first")
    frameworks = ["pytorch", "horovod", "keras-torch", "keras-jax", "keras-tf", "tensorflow", "gluon", "chainer"]
    refused = {run.config.framework: run.refusal for run in plan_runs(job, frameworks, None, [1], "weak")}
    assert [name for name, refusal in refused.items() if refusal is None] == frameworks[:6]
    for name in frameworks[6:]:
        assert refused[name] == (
            "unsupported",
            f"{name} cannot step tiny's optimizer adamw as torch's does here (it builds sgd)",
        )


def test_pytorch_steps_a_declared_adamw_as_written_out_by_hand():
    """w = 1, g = 0.5, rate 0.1: decay to 0.99, then Adam's first bias-corrected step, 0.1 x 0.5 / (0.5 + 1e-6)."""
    weight = torch.nn.Parameter(torch.ones(3, dtype=torch.float64))
    optimizer = build_optimizer([weight], 0.1, ADAMW_COSINE.optimizer)
    assert isinstance(optimizer, torch.optim.AdamW)
    assert optimizer.defaults["betas"] == (0.8, 0.99) and optimizer.defaults["eps"] == 1e-6
    weight.grad = torch.full((3,), 0.5, dtype=torch.float64)
    optimizer.step()
    torch.testing.assert_close(weight.detach(), torch.full((3,), 0.99 - 0.1 * 0.5 / (0.5 + 1e-6), dtype=torch.float64))


DECAYED_SGD_PROBE = """
import json, os, sys
os.environ["KERAS_BACKEND"] = "jax"
import numpy as np
import keras
from mgbench.core.optimization import SGD
from mgbench.frameworks.keras.models import OPTIMIZERS

optimizer = OPTIMIZERS["sgd"](0.1, SGD(momentum=0.9, weight_decay=0.5))
weights = keras.Variable(np.ones(2, dtype="float32"))
steps = []
for gradient in ([1.0, -1.0], [0.5, 0.5]):
    optimizer.apply([keras.ops.convert_to_tensor(np.array(gradient, dtype="float32"))], [weights])
    steps.append(np.asarray(keras.ops.convert_to_numpy(weights.value)).tolist())
print(json.dumps(steps))
"""


def test_keras_adds_the_declared_weight_decay_to_the_gradient_as_torch_does():
    """Step 1: g + 0.5 w = (1.5, -0.5) is the buffer, w = (0.85, 1.05); step 2: g + 0.5 w =
    (0.925, 1.025), buffer 0.9 b + that = (2.275, 0.575), w = (0.6225, 0.9925)."""
    found = json.loads(run_in(framework_python("keras-jax"), DECAYED_SGD_PROBE).strip().splitlines()[-1])
    np.testing.assert_allclose(found, [[0.85, 1.05], [0.6225, 0.9925]], rtol=1e-6)


def test_a_row_records_the_objective_and_optimization_it_ran(tmp_path):
    job = [*tiny_job(4, batch=2, image_size=32, device="cpu"), "--init", "framework"]
    ran = mgbench("run", "--framework", "fake", "--strategy", "steady", "--gpus", "1", *job, "--out", str(tmp_path))
    assert ran.returncode == 0, ran.stderr
    row = read_rows(tmp_path).iloc[0]
    assert row.objective == "softmax_cross_entropy"
    assert row.optimization == IMAGE_SGD.record()
    assert IMAGE_SGD.optimizer == SGD(momentum=0.9) and IMAGE_SGD.schedule == LinearScalingWarmup(warmup_epochs=1)
