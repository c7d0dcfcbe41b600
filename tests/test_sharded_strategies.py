"""PyTorch's sharded data-parallel strategies: `fsdp` (FSDP2, ZeRO-3), `fsdp-grad-op` (FSDP2
keeping the gathered parameters to the backward, ZeRO-2) and `zero1` (DDP with
ZeroRedundancyOptimizer, ZeRO-1).

What each declares it shards and moves is checked against the ring's formula on gpt2's
parameters; each runs on 2 CPU processes over gloo (torchrun), where steps on 2 processes with
global batch B must leave the weights of one process on B: gpt2-tiny under each, and the tiny
image model (which names no shard units) under fsdp.
"""

from pathlib import Path

import pytest
import torch
from conftest import assert_compiled_equals_eager, assert_two_devices_equal_one, max_difference, run_row, saved_state

from mgbench.core.collectives import CollectiveKind, Phase, Sharding, Tensors
from mgbench.core.models import model_spec
from mgbench.frameworks.pytorch.adapter import Autocasting
from mgbench.frameworks.pytorch.gpt2 import build_gpt2
from mgbench.frameworks.pytorch.models import adamw, sgd
from mgbench.frameworks.pytorch.spec import FRAMEWORK
from mgbench.frameworks.pytorch.strategies import StepLoss, constructor_settings, parameter_root, shard_units
from mgbench.records.bandwidth import GRADIENT_BYTES_PER_PARAM, expected_communication_seconds

SHARDED = ("fsdp", "fsdp-grad-op", "zero1")
MODEL = "gpt2-tiny"
SEED = 0


def declared(strategy: str):
    communication = FRAMEWORK.strategy(strategy).communication
    assert communication is not None
    return communication


@pytest.mark.parametrize("devices", [2, 4])
def test_each_declares_the_bytes_a_step_moves_through_a_devices_link_for_gpt2(devices):
    """At 1 byte/s the expected communication time is the bytes: per device, a reduce-scatter or
    an all-gather of the model's fp32 bytes moves (N-1)/N of them, an all-reduce twice that, and
    the broadcasts of every parameter (each by its owner) all of them once."""
    parameters = model_spec("gpt2").reference_parameters
    model_bytes = parameters * GRADIENT_BYTES_PER_PARAM
    ring = (devices - 1) / devices
    expected = {
        "fsdp": 3 * ring * model_bytes,  # gather for the forward, again for the backward, reduce-scatter
        "fsdp-grad-op": 2 * ring * model_bytes,  # gather once, reduce-scatter
        "zero1": 2 * ring * model_bytes + model_bytes,  # all-reduce, then every shard broadcast
        "ddp": 2 * ring * model_bytes,
    }
    moved = {
        strategy: expected_communication_seconds(declared(strategy), parameters, GRADIENT_BYTES_PER_PARAM, 1.0, devices)
        for strategy in expected
    }
    assert moved == pytest.approx(expected)


def test_each_declares_what_it_shards_and_when_it_moves_it():
    assert declared("fsdp").shards is Sharding.PARAMETERS
    assert declared("fsdp-grad-op").shards is Sharding.GRADIENTS
    assert declared("zero1").shards is Sharding.OPTIMIZER_STATE
    moves = {name: [(c.kind, c.carries, c.phase) for c in declared(name).collectives] for name in SHARDED}
    gather, scatter = CollectiveKind.ALL_GATHER, CollectiveKind.REDUCE_SCATTER
    assert moves["fsdp"] == [
        (gather, Tensors.PARAMETERS, Phase.FORWARD),
        (gather, Tensors.PARAMETERS, Phase.BACKWARD),
        (scatter, Tensors.GRADIENTS, Phase.BACKWARD),
    ]
    assert moves["fsdp-grad-op"] == [
        (gather, Tensors.PARAMETERS, Phase.FORWARD),
        (scatter, Tensors.GRADIENTS, Phase.BACKWARD),
    ]
    assert moves["zero1"] == [
        (CollectiveKind.ALL_REDUCE, Tensors.GRADIENTS, Phase.BACKWARD),
        (CollectiveKind.BROADCAST, Tensors.PARAMETERS, Phase.AFTER_BACKWARD),
    ]
    assert all(FRAMEWORK.strategy(name).cpu_multi_device_note is None for name in SHARDED)


def test_gpt2s_blocks_are_its_shard_units_and_a_model_naming_none_is_one():
    shape = model_spec(MODEL).language_model
    assert shape is not None
    model = build_gpt2(shape, SEED)
    casting = Autocasting(model, "cpu", None)
    assert shard_units(casting) == list(model.h)
    assert len(model.h) == shape.layers
    assert shard_units(Autocasting(torch.nn.Linear(2, 2), "cpu", None)) == []


def test_fsdps_root_is_the_model_inside_its_parameter_free_wrappers():
    model = build_gpt2(model_spec(MODEL).language_model, SEED)
    assert parameter_root(Autocasting(model, "cpu", None)) is model
    assert parameter_root(model) is model
    assert parameter_root(StepLoss(Autocasting(model, "cpu", None), torch.nn.CrossEntropyLoss())) is model
    sequential = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 2))
    assert parameter_root(sequential) is sequential  # two children with parameters: the model itself


def test_zero1_rebuilds_the_declared_optimizer_with_its_settings():
    parameter = [torch.nn.Parameter(torch.zeros(3))]
    spec = model_spec(MODEL).optimization
    built = adamw(parameter, 6e-4, spec.optimizer, fused=False)
    again = type(built)(parameter, **constructor_settings(built))
    assert again.defaults == built.defaults
    momentum = sgd(parameter, 0.1, model_spec("tiny").optimization.optimizer, fused=False)
    assert type(momentum)(parameter, **constructor_settings(momentum)).defaults == momentum.defaults


@pytest.fixture(scope="module")
def language_model_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder for the gpt2-tiny runs, so that every strategy's test reuses the one-process runs."""
    return tmp_path_factory.mktemp("gpt2-tiny")


@pytest.mark.slow
@pytest.mark.parametrize("strategy", SHARDED)
def test_two_processes_train_gpt2_tiny_as_one_process_on_the_global_batch(strategy, language_model_runs):
    """`mgbench run` (torchrun, the adapter, `--save-state` gathering a sharded model's weights
    from every process) of gpt2-tiny: two steps of its declared AdamW (the state is made at the
    first and read at the second) on 2 processes of 4 sequences each leave the weights of one
    process on the 8, and give an ok row."""
    lm = {"model": MODEL}
    initial = saved_state(language_model_runs, "pytorch", "ddp", 1, 8, 0.0, **lm)
    single = saved_state(language_model_runs, "pytorch", "ddp", 1, 8, 0.01, 2, **lm)
    spread = saved_state(language_model_runs, "pytorch", strategy, 2, 4, 0.01, 2, **lm)
    assert sorted(spread) == sorted(single)
    assert max_difference(single, spread) < 1e-5 < max_difference(single, initial)
    assert run_row(language_model_runs, "pytorch", strategy, 2, 4, 0.01, 2, **lm)["status"] == "ok"


@pytest.mark.slow
def test_fsdp_trains_an_image_model_that_names_no_units_as_one_unit(tmp_path):
    """The tiny image model names no shard units, so FSDP shards it whole; its channels_last
    convolutions' weights are made row-major first (FSDP2 shards no other layout)."""
    assert_two_devices_equal_one(tmp_path, "pytorch", "fsdp", 1e-5, data_format="channels_last")


@pytest.mark.slow
def test_a_compiled_fsdp_step_trains_as_the_eager_one_on_two_processes(tmp_path):
    """torch.compile of the module FSDP2 sharded (its hooks gather and scatter around the
    compiled graphs): fsdp declares no reason to refuse --compile."""
    assert FRAMEWORK.strategy("fsdp").no_compile_note is None
    row = assert_compiled_equals_eager(tmp_path, "pytorch", "fsdp", 2, 4, 1e-5)
    assert row.compiler == "torch.compile (default)"
