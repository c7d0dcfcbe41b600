"""`--compile`: what each framework's registry entry says it does with it, how planning refuses it
where there is no compiler, and the compile step the driver clocks apart from the timed steps.

The compiled steps themselves are checked against eager ones in each framework's own tests
(test_pytorch, test_keras, test_tensorflow), since compiling costs tens of seconds per run.
"""

from conftest import mgbench, read_rows

from mgbench.cli import build_parser
from mgbench.core.config import RunConfig
from mgbench.core.job import Job
from mgbench.frameworks.registry import framework_spec
from mgbench.runner.plan import plan_runs
from mgbench.training.driver import run_training


def job(framework: str = "pytorch", strategy: str = "ddp", devices: int = 1, **changes) -> RunConfig:
    """The tiny job in `framework`'s default data format."""
    data_format = framework_spec(framework).capabilities.default_data_format("tiny")
    return RunConfig.flat(framework, strategy, "tiny", devices, "cpu", 2, 4, data_format=data_format, **changes)


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
    runs = plan_runs(Job("tiny", "cpu", 2, 4, compile="default"), ["pytorch", "gluon", "chainer"], None, [1, 2], "weak")
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


def test_the_compile_step_is_clocked_apart_and_the_timed_steps_follow_it(fake_plugin):
    import fakefw

    adapter = fakefw.create_adapter("steady")
    config = RunConfig.flat("fake", "steady", "tiny", 1, "cpu", 8, 30, compile="default")
    result = run_training(adapter, config, compiler="fake-jit")
    assert adapter.steps_done == 31 and len(result.series.step_seconds) == len(result.series.losses) == 30
    assert result.compiled.compiler == "fake-jit"
    assert fakefw.WARMUP_SECONDS + fakefw.INPUT_SECONDS <= result.compiled.compile_seconds < 10 * fakefw.WARMUP_SECONDS
    # The fake's first slow step was the compile step: the timed steps start with the other slow
    # ones (a sleep lasts at least its length; how long a steady one lasts is left to the load, so
    # warm-up detection, tested on exact series in test_timing, is not asked of wall-clock sleeps).
    slow = fakefw.WARMUP_SECONDS
    assert (
        min(result.series.step_seconds[: fakefw.WARMUP_STEPS - 1])
        >= slow
        > result.series.step_seconds[fakefw.WARMUP_STEPS - 1]
    )
    eager = run_training(fakefw.create_adapter("steady"), config.with_changes(compile=None))
    assert eager.compiled.compiler is None and eager.compiled.compile_seconds is None
    assert (
        min(eager.series.step_seconds[: fakefw.WARMUP_STEPS]) >= slow > eager.series.step_seconds[fakefw.WARMUP_STEPS]
    )


def test_compare_rows_and_table_carry_the_compile_phase(tmp_path):
    out = tmp_path / "run"
    done = mgbench("compare", "--frameworks", "fake", "--gpus", "1", "--steps", "6", "--compile", "--out", str(out))
    assert done.returncode == 0, done.stderr
    row = read_rows(out).iloc[0]
    assert (row.compile, row.compiler, len(row.step_seconds)) == ("default", "fake-jit", 6)
    assert row.compile_seconds > 0
    assert "compile s" in (out / "summary.md").read_text()
    refused = tmp_path / "refused"
    done = mgbench("compare", "--frameworks", "fake", "--gpus", "1", "--compile", "max-autotune", "--out", str(refused))
    row = read_rows(refused).iloc[0]
    assert (row.status, row.error) == (
        "unsupported",
        "fake compiles with fake-jit in mode default only, not max-autotune",
    )


def test_a_mode_no_framework_compiles_in_is_refused_before_anything_runs(tmp_path):
    for verb in (["compare", "--frameworks", "pytorch", "--out", str(tmp_path / "out")], ["run"]):
        done = mgbench(*verb, "--compile", "bogus-mode")
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1, done.stderr
        assert lines[0].startswith("mgbench: error: argument --compile: unknown mode 'bogus-mode'")
        for offered in (
            "pytorch, keras-torch, horovod (torch.compile: default, reduce-overhead, max-autotune, "
            "max-autotune-no-cudagraphs)",
            "keras-tf, keras-jax, tensorflow (xla: default)",
            "gluon, chainer (no compiler)",
            "fake (fake-jit: default)",
        ):
            assert offered in lines[0]
    assert not (tmp_path / "out").exists()
