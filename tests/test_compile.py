"""`--compile`: what each framework's registry entry says it does with it, and how planning
refuses it where there is no compiler."""

import pytest

from mgbench.cli import build_parser
from mgbench.common.config import RunConfig
from mgbench.frameworks.registry import framework_spec
from mgbench.runner.plan import plan_runs


def job(framework: str = "pytorch", strategy: str = "ddp", devices: int = 1, **changes) -> RunConfig:
    """The tiny job in `framework`'s default data format."""
    data_format = framework_spec(framework).capabilities.default_data_format("tiny")
    return RunConfig(framework, strategy, "tiny", devices, "cpu", 2, 4, data_format=data_format, **changes)


def refusal(framework: str, strategy: str, devices: int = 1, mode: str | None = "default") -> str | None:
    return framework_spec(framework).refusal(job(framework, strategy, devices, compile=mode))


def test_compile_option_takes_an_optional_mode():
    parser = build_parser()
    common = ["run", "--framework", "pytorch"]
    assert parser.parse_args(common).compile is None
    assert parser.parse_args([*common, "--compile"]).compile == "default"
    assert parser.parse_args([*common, "--compile", "reduce-overhead", "--steps", "3"]).compile == "reduce-overhead"


def test_frameworks_without_a_compiler_are_refused_with_the_reason():
    assert refusal("gluon", "device", mode=None) is None
    assert refusal("gluon", "device").startswith(
        "gluon cannot compile its step (--compile): its nets always run hybridized"
    )
    assert refusal("chainer", "chainermn") == (
        "chainer cannot compile its step (--compile): Chainer runs define-by-run only and has no graph compiler"
    )
    runs = plan_runs(job(compile="default"), ["pytorch", "gluon", "chainer"], None, [1, 2], "weak", False)
    refused = {(run.config.framework, run.config.devices): run.refusal for run in runs}
    assert refused[("pytorch", 1)] is None and refused[("pytorch", 2)] is None
    assert {refused[(name, count)][0] for name in ("gluon", "chainer") for count in (1, 2)} == {"unsupported"}


def test_what_each_compiling_framework_declares():
    assert all(
        refusal(name, strategy, 2) is None
        for name, strategy in (
            ("pytorch", "ddp"),
            ("horovod", "hvd"),
            ("keras-torch", "ddp"),
            ("tensorflow", "mirrored"),
            ("keras-jax", "jax-dp"),
        )
    )
    assert refusal("pytorch", "ddp", 2, "reduce-overhead") is None
    assert refusal("pytorch", "ddp", mode="fastest") == (
        "pytorch compiles with torch.compile in mode default, reduce-overhead, max-autotune, "
        "max-autotune-no-cudagraphs only, not fastest"
    )
    for strategy in ("dp", "dp-loss"):
        assert "torch.compile composes with DistributedDataParallel, not with nn.DataParallel" in refusal(
            "pytorch", strategy
        )
    # Keras over TF compiles its whole step, strategy.run and all, as one XLA function: one device only.
    assert refusal("keras-tf", "mirrored") is None
    assert refusal("keras-tf", "mirrored", 2).startswith("keras-tf compiles with xla on one device only")
    assert "variables live on the CPU" in refusal("keras-tf", "central-storage")


def test_rows_name_what_compiled_the_step_and_keras_jax_always_compiles():
    def compiled_by(framework: str, strategy: str, mode: str | None) -> str | None:
        return framework_spec(framework).capabilities.compiled_by(job(framework, strategy, compile=mode))

    assert compiled_by("pytorch", "ddp", None) is None
    assert compiled_by("pytorch", "ddp", "reduce-overhead") == "torch.compile (reduce-overhead)"
    assert compiled_by("tensorflow", "mirrored", "default") == "xla"
    assert (
        compiled_by("keras-jax", "jax-shard-map", None)
        == compiled_by("keras-jax", "jax-shard-map", "default")
        == ("xla (always)")
    )
    assert compiled_by("gluon", "device", None) is None
