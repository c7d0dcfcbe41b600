"""Planning: what the registry or the machine already knows becomes a row before anything launches.

A fake framework that trains in fp32 only and one whose package is missing stand in for the
registry's real entries, so the rules are checked without any framework installed.
"""

import pandas as pd
import pytest
from conftest import mgbench, read_rows, tiny_job

from mgbench.core.config import RunConfig
from mgbench.core.errors import UsageError
from mgbench.core.job import GPU_BATCH_PER_DEVICE, Job, job_size
from mgbench.core.kinds import DeviceKind
from mgbench.frameworks.exchange import DDP_EXCHANGE
from mgbench.frameworks.registry import BUILTIN, expand_frameworks, families, framework_spec, registered
from mgbench.frameworks.specs import Capabilities, ModelBuilders, StrategySpec, with_unstaged_twin
from mgbench.measure.timing import FIRST_STEP_KEPT
from mgbench.records.figures import OomRetries
from mgbench.records.results import RunResult, Status
from mgbench.runner.orchestrator import batch_warnings
from mgbench.runner.plan import chosen_strategies, installed_runs, plan_runs

PLUGINS = "fakefw,fakefw_absent"


def base(**changes) -> RunConfig:
    return RunConfig.flat(
        **{
            **dict(
                framework="fake",
                strategy="steady",
                model="tiny",
                devices=1,
                device_kind="cpu",
                batch_per_device=2,
                steps=4,
            ),
            **changes,
        }
    )


def job(**changes) -> Job:
    """`base()`'s job, before planning gives it a framework, a strategy and a device count."""
    return Job(**{**dict(model="tiny", device_kind="cpu", batch_per_device=2, steps=4), **changes})


def test_unsupported_and_not_installed_runs_become_rows_without_launching(tmp_path):
    out = tmp_path / "run"
    done = mgbench(
        "compare",
        "--frameworks",
        "fake,absent",
        "--strategies",
        "all",
        "--gpus",
        "2",
        *tiny_job(4, batch=2),
        "--precision",
        "bf16",
        "--out",
        str(out),
        MGBENCH_PLUGINS=PLUGINS,
    )
    assert done.returncode == 1, done.stderr
    rows = read_rows(out)
    fake, absent = rows[rows.framework == "fake"], rows[rows.framework == "absent"]
    assert len(fake) == 2 * len(framework_spec_of("fake").strategies) and len(absent) == 2
    assert set(fake.status) == {"unsupported"}
    assert set(fake.error) == {"fake trains in fp32 only, not bf16"}
    assert set(absent.status) == {"not-installed"}
    assert all("lacks mgbench_no_such_package; install: pip install mgbench-no-such-package" in e for e in absent.error)
    assert not (out / "logs").exists() and not (out / "configs").exists()
    assert "Traceback" not in done.stderr


def test_a_missing_framework_leaves_the_others_running(tmp_path):
    out = tmp_path / "run"
    done = mgbench(
        "compare",
        "--frameworks",
        "absent,fake",
        "--gpus",
        "2",
        *tiny_job(6, batch=2),
        "--out",
        str(out),
        MGBENCH_PLUGINS=PLUGINS,
    )
    rows = read_rows(out).set_index(["framework", "devices"])
    assert rows.loc[("fake", 1), "status"] == rows.loc[("fake", 2), "status"] == "ok", done.stderr
    assert rows.loc[("absent", 2), "status"] == "not-installed"
    assert done.returncode == 1


def framework_spec_of(name: str):
    import os

    os.environ["MGBENCH_PLUGINS"] = PLUGINS
    try:
        return framework_spec(name)
    finally:
        del os.environ["MGBENCH_PLUGINS"]


def test_each_run_refused_for_what_it_cannot_do_and_nothing_else(fake_plugin):
    runs = plan_runs(job(), ["fake"], ["steady"], [1, 2], "weak")
    assert [run.refusal for run in runs] == [None, None]
    bf16 = plan_runs(job(precision="bf16"), ["fake"], ["steady"], [1, 2], "weak")
    assert [run.refused_row().status for run in bf16] == ["unsupported", "unsupported"]
    real = installed_runs(plan_runs(job(dataset="synthetic"), ["fake"], ["steady"], [1], "weak"), {"fake": "gone"})
    assert real[0].refusal == ("not-installed", "gone")


def test_capabilities_name_the_reason():
    catalogue = ModelBuilders("fake.models", ("densenet121", "resnet50", "tiny"))
    keras_like = Capabilities(
        ModelBuilders("fake.models", catalogue.models, data_formats={"densenet121": ("channels_last",)})
    )
    assert keras_like.refusal(base(model="densenet121", data_format="channels_first")) == (
        "trains densenet121 in channels_last only, not channels_first"
    )
    assert keras_like.refusal(base(model="resnet50", data_format="channels_first")) is None
    assert Capabilities(catalogue).refusal(base(dataset="chestxray:/data")).startswith("has no loader for real data")
    assert Capabilities(catalogue, loader="fake.Loader").refusal(base(dataset="chestxray:/data")) is None
    assert Capabilities(ModelBuilders("fake.models", ("tiny",))).refusal(base(model="resnet50")) == (
        "has no resnet50 (models: tiny)"
    )


def test_each_framework_gets_its_default_data_format_unless_one_is_given():
    pytorch, gluon = "pytorch", "gluon"
    runs = plan_runs(job(model="densenet121"), [pytorch, gluon, "keras-jax"], None, [1], "weak")
    assert {run.config.framework: run.config.job.data_format for run in runs} == {
        "pytorch": "channels_last",
        "gluon": "channels_first",
        "keras-jax": "channels_last",
    }
    assert all(run.refusal is None for run in runs)
    forced = plan_runs(job(model="densenet121", data_format="channels_first"), ["keras-jax"], None, [1], "weak")
    assert forced[0].refusal[0] == "unsupported" and "channels_last only" in forced[0].refusal[1]


def test_default_strategies_all_and_named(fake_plugin):
    pytorch = framework_spec("pytorch")
    assert chosen_strategies(pytorch, None) == ["ddp"]
    assert chosen_strategies(pytorch, ["all"]) == [
        "ddp",
        "ddp-unstaged",
        "fsdp",
        "fsdp-grad-op",
        "zero1",
        "dp",
        "dp-loss",
    ]
    assert chosen_strategies(pytorch, ["dp"]) == ["dp"]
    with pytest.raises(UsageError, match="has no strategy 'mirrored'"):
        chosen_strategies(pytorch, ["mirrored"])


def test_keras_is_every_backend_once_and_says_where_it_came_from():
    assert expand_frameworks(["keras", "pytorch", "keras-jax"]) == [
        *[(name, "keras") for name in families(registered())["keras"]],
        ("pytorch", None),
    ]
    with pytest.raises(UsageError, match="unknown framework 'caffe'"):
        expand_frameworks(["caffe"])


def test_cpu_job_is_shrunk_only_when_no_size_was_given(tmp_path):
    out = tmp_path / "shrunk"
    done = mgbench("compare", "--frameworks", "fake", "--gpus", "1", "--out", str(out))
    assert done.returncode == 0, done.stderr
    row = read_rows(out).iloc[0]
    assert (row.image_size, row.batch_per_device, row.steps) == (64, 8, 20)
    assert "shrunk to --image-size 64 --batch-per-gpu 8 --steps 20" in " ".join(done.stderr.split())
    sized = tmp_path / "sized"
    done = mgbench("compare", "--frameworks", "fake", "--gpus", "1", "--steps", "6", "--out", str(sized))
    row = read_rows(sized).iloc[0]
    assert (
        pd.isna(row.image_size) and (row.batch_per_device, row.steps) == (32, 6) and "job is shrunk" not in done.stderr
    )


def test_the_gpu_default_job_is_the_one_the_gpu_bounds_and_each_size_given_stands():
    """On GPUs an unsized job is 256 per GPU for 100 steps (an eager DenseNet-121 fp32 step of 32
    follows the host's launch speed); what is given stands, and CPU devices keep their own sizes."""
    gpu = job_size("densenet121", DeviceKind.CUDA)
    assert (gpu.batch_per_device, gpu.steps, gpu.input_size, gpu.shrunk) == (256, 100, None, None)
    assert job_size("densenet121", DeviceKind.CUDA, batch_per_device=32).batch_per_device == 32
    assert job_size("densenet121", DeviceKind.CUDA, steps=7).steps == 7
    assert job_size("densenet121", DeviceKind.CUDA, steps=7).batch_per_device == 256
    cpu = job_size("densenet121", DeviceKind.CPU, steps=7)
    assert (cpu.batch_per_device, cpu.steps) == (32, 7)
    assert job_size("densenet121", DeviceKind.CPU, batch_per_device=4).steps == 200


def test_data_on_device_is_refused_with_a_reason_where_a_strategy_cannot_and_with_real_data():
    strategy = StrategySpec("s", "inprocess", "feeds from host", no_data_on_device_note="its input is a host pipeline")
    assert strategy.refusal(base()) is None
    assert strategy.refusal(base(data_on_device=True)) == (
        "cannot keep its input on the devices (--data-on-device): its input is a host pipeline"
    )
    with pytest.raises(UsageError, match="--data-on-device keeps synthetic batches"):
        base(data_on_device=True, dataset="chestxray:/data")


def test_an_unstaged_twin_is_its_staged_strategy_fed_in_line_and_refuses_data_on_device():
    staged = StrategySpec("s", "torchrun", "feeds ahead", no_compile_note="no compiler", exchange=DDP_EXCHANGE)
    same, twin = with_unstaged_twin(staged, "each batch copied when the step takes it")
    assert same is staged and staged.staged and staged.kind == "s"
    assert (twin.name, twin.description) == ("s-unstaged", "as s, each batch copied when the step takes it")
    assert not twin.staged and twin.kind == "s"
    assert (twin.launcher, twin.no_compile_note, twin.exchange) == ("torchrun", "no compiler", DDP_EXCHANGE)
    assert staged.refusal(base(data_on_device=True)) is None
    assert "--data-on-device" in twin.refusal(base(data_on_device=True))


def test_every_unstaged_strategy_is_the_twin_of_a_staged_one_of_its_framework():
    twins = [(spec, s) for spec in BUILTIN for s in spec.strategies if not s.staged and s.twin_of]
    assert {spec.name for spec, _ in twins} == {"pytorch", "keras-tf", "keras-jax", "keras-torch", "tensorflow"}
    for spec, twin in twins:
        staged = spec.strategy(twin.twin_of)
        assert staged.staged and staged.twin_of is None and twin.name == f"{staged.name}-unstaged"
        assert (twin.launcher, twin.exchange, twin.dispatch) == (staged.launcher, staged.exchange, staged.dispatch)


def test_one_timed_step_runs_with_a_warning_printed_and_on_its_row(tmp_path):
    done = mgbench("compare", "--frameworks", "fake", "--gpus", "1", "--steps", "1", "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    said = " ".join(done.stderr.split())
    assert f"--steps 1: {FIRST_STEP_KEPT}" in said
    summary = pd.read_csv(tmp_path / "summary.csv").iloc[0]
    assert (summary.steady_steps, summary.warmup_steps) == (1, 0) and FIRST_STEP_KEPT in summary.warning
    assert FIRST_STEP_KEPT in (tmp_path / "summary.md").read_text()


def test_a_framework_declaring_its_own_gpu_default_for_a_model_is_planned_at_it_only_for_the_default_job():
    """keras-torch declares 128 per GPU for DenseNet-121 (256 does not fit 80 GB): the default GPU
    job plans it there, and pytorch at 256; a batch given, another model, or CPU devices keep the
    job's; strong scaling splits the framework's own; its ok rows say so."""
    size = job_size("densenet121", DeviceKind.CUDA)
    assert size.batch_default and not job_size("densenet121", DeviceKind.CUDA, batch_per_device=256).batch_default
    default = Job("densenet121", "cuda", size.batch_per_device, size.steps, batch_default=size.batch_default)

    def batches(job: Job, scaling: str = "weak") -> dict[tuple[str, int], int]:
        runs = plan_runs(job, ["keras-torch", "pytorch"], None, [1, 2], scaling)
        return {(run.config.framework, run.config.devices): run.config.job.batch_per_device for run in runs}

    declared = framework_spec("keras-torch").memory.gpu_batches["densenet121"].batch_per_device
    assert declared == 128 < GPU_BATCH_PER_DEVICE
    assert batches(default) == {
        ("keras-torch", 1): 128,
        ("keras-torch", 2): 128,
        ("pytorch", 1): 256,
        ("pytorch", 2): 256,
    }
    assert batches(default, "strong") == {
        ("keras-torch", 1): 128,
        ("keras-torch", 2): 64,
        ("pytorch", 1): 256,
        ("pytorch", 2): 128,
    }
    assert set(batches(default.with_changes(batch_default=False)).values()) == {256}
    assert set(batches(default.with_changes(model="resnet50")).values()) == {256}
    cpu = plan_runs(default.with_changes(device_kind="cpu"), ["keras-torch"], None, [1], "weak")
    assert cpu[0].config.job.batch_per_device == 256

    run = plan_runs(default, ["keras-torch"], None, [1], "weak")[0]
    ok = RunResult(run.config, Status.OK)
    ok.retries = OomRetries(128, 0)
    [said] = batch_warnings(run, ok)
    assert said.startswith("keras-torch trains densenet121 at its own default of 128 per GPU, not the job's 256: ")
    pytorch = plan_runs(default, ["pytorch"], None, [1], "weak")[0]
    assert batch_warnings(pytorch, RunResult(pytorch.config, Status.OK)) == []
