"""The job apart from its runs: a compare reads, sizes and plans the job once, its runs carry what
the dataset check and the installation probes found, and the device kind and data format are
typed values that still travel as the strings run folders hold."""

import argparse
import ast
import json
from pathlib import Path

import pytest
from conftest import tiny_job
from rich.console import Console
from test_architecture import MODULES
from test_datasets import nih_rows, write_nih

import mgbench.cli.options
import mgbench.runner.compare_service
from mgbench.cli.compare import add_arguments, plan_new
from mgbench.core.config import RunConfig
from mgbench.core.errors import UsageError
from mgbench.core.inputs import TokenInput
from mgbench.core.job import Job, job_size
from mgbench.core.kinds import DataFormat, DeviceKind

FIXTURE = Path(__file__).parent / "fixtures" / "run-folder-before-layout" / "compare.json"
SPELLINGS = {member.value for kind in (DeviceKind, DataFormat) for member in kind}


def compare_args(tmp_path: Path, *options: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    argv = [*options, "--out", str(tmp_path / "run")]
    args = parser.parse_args(argv)
    args.argv = ["compare", *argv]
    return args


def counted(monkeypatch: pytest.MonkeyPatch, module: object, name: str) -> list[int]:
    """`module.name` wrapped to count its calls (one entry per call)."""
    calls, original = [], getattr(module, name)

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counting)
    return calls


def test_a_compare_sizes_and_plans_its_job_once(tmp_path, fake_plugin, monkeypatch):
    sized = counted(monkeypatch, mgbench.cli.options, "job_size")
    planned = counted(monkeypatch, mgbench.runner.compare_service, "plan_runs")
    args = compare_args(tmp_path, "--frameworks", "fake", "--strategies", "steady,flaky", "--gpus", "2")
    _, plan, runs = plan_new(args, Console(stderr=True))
    assert (len(sized), len(planned)) == (1, 1)
    assert [run.config for run in runs] == plan.configs and len(runs) == 4
    assert plan.job_shrink and "job is shrunk" in plan.job_shrink


def test_every_run_carries_the_dataset_check_and_its_framework_installation(tmp_path, fake_plugin, monkeypatch):
    monkeypatch.setenv("MGBENCH_PLUGINS", "fakefw,fakefw_absent")
    src = tmp_path / "src"
    write_nih(src, nih_rows(20))
    (src / "images" / "00000004_000.png").write_bytes(b"not an image")
    options = ["--frameworks", "fake,absent", "--gpus", "2", *tiny_job(4, batch=2)]
    args = compare_args(tmp_path, *options, "--dataset", f"chestxray:{src}", "--skip-bad-images")
    _, plan, runs = plan_new(args, Console(stderr=True))
    assert {config.job.skipped_images for config in plan.configs} == {(str(src / "images" / "00000004_000.png"),)}
    # Neither has a loader for real data; a framework not installed is said to be that instead.
    assert {run.config.framework: run.refusal[0] for run in runs} == {"fake": "unsupported", "absent": "not-installed"}


def test_a_bad_strategy_is_refused_before_the_dataset_is_read(tmp_path, fake_plugin, monkeypatch):
    read = counted(monkeypatch, mgbench.runner.compare_service, "check_dataset")
    args = compare_args(tmp_path, "--frameworks", "fake", "--strategies", "nope", *tiny_job(4))
    with pytest.raises(UsageError, match="has no strategy 'nope'"):
        plan_new(args, Console(stderr=True))
    assert read == []


def test_a_job_without_a_data_format_leaves_each_framework_its_own():
    job = Job("densenet121", "cpu", 2, 4)
    assert job.data_format is None and job.device_kind is DeviceKind.CPU
    with pytest.raises(UsageError, match="batch per device must be at least 1"):
        Job("tiny", "cpu", 0, 4)
    config = RunConfig.of(job, "fake", "steady", 2, 1, DataFormat.CHANNELS_LAST)
    assert (config.job.batch_per_device, config.global_batch, config.job.data_format.channels_last) == (1, 2, True)


def test_kinds_and_formats_read_back_as_typed_values_and_travel_as_the_same_strings():
    recorded = json.loads(FIXTURE.read_text())["configs"][0]
    config = RunConfig.from_dict(recorded)
    assert type(config.job.device_kind) is DeviceKind and not config.job.device_kind.on_gpu
    assert type(config.job.data_format) is DataFormat and not config.job.data_format.channels_last
    assert DeviceKind("cuda").on_gpu and DataFormat("channels_last").channels_last
    written = json.loads(config.to_json())
    assert {name: written[name] for name in recorded} == recorded
    assert config.run_id == "fake-steady-1cpu"
    with pytest.raises(UsageError, match="not a run config: data_format is 'nchw'"):
        RunConfig.from_dict({**recorded, "data_format": "nchw"})


def test_device_kinds_and_data_formats_are_asked_by_property_not_compared_as_strings():
    """No comparison (`==`, `!=`, `in`) of a device kind or data format (a name, attribute or
    column called so) against one of their spellings: they are asked by property."""
    compared = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Compare):
                continue
            leaves = list(ast.walk(node))
            named = {leaf.id for leaf in leaves if isinstance(leaf, ast.Name)}
            named |= {leaf.attr for leaf in leaves if isinstance(leaf, ast.Attribute)}
            constants = {leaf.value for leaf in leaves if isinstance(leaf, ast.Constant)}
            if (named | constants) & {"device_kind", "data_format"} and constants & SPELLINGS:
                compared.append(f"{name}:{node.lineno}")
    assert compared == []


def test_a_language_model_job_is_sized_in_tokens_and_refuses_image_options():
    """A GPT-2 job's sample is a sequence: `--seq-len` sizes it, its rate counts tokens (seq_len a
    sample), and the image options (size, data format) are refused, naming the one that applies."""
    job = Job("gpt2-tiny", DeviceKind.CPU, 4, 2, seq_len=32)
    assert (job.input, job.input_size, job.input.unit.label, job.input.unit.of(10.0)) == (
        TokenInput(32, 512),
        32,
        "tokens/s",
        320.0,
    )
    assert not job.input.has_layout and job.data_format is None
    with pytest.raises(
        UsageError, match="--image-size does not size gpt2-tiny, which trains on 64 tokens; use --seq-len"
    ):
        Job("gpt2-tiny", DeviceKind.CPU, 4, 2, image_size=32)
    with pytest.raises(UsageError, match="--data-format: gpt2-tiny trains on 64 tokens, which have no channels"):
        Job("gpt2-tiny", DeviceKind.CPU, 4, 2, data_format="channels_last")
    with pytest.raises(UsageError, match="attends over 1 to 64 tokens"):
        Job("gpt2-tiny", DeviceKind.CPU, 4, 2, seq_len=65)
    with pytest.raises(UsageError, match="--seq-len does not size resnet50, which trains on 224 px; use --image-size"):
        Job("resnet50", DeviceKind.CPU, 4, 2, seq_len=32)


def test_an_unsized_language_model_job_shrinks_its_sequences_on_cpu_and_runs_its_own_batch_on_gpus():
    """On CPU devices an unsized GPT-2 job trains 64-token sequences; on GPUs an unsized one
    trains the model's own 16 sequences a GPU at its whole context, where an image model trains 256."""
    cpu = job_size("gpt2", DeviceKind.CPU)
    assert (cpu.batch_per_device, cpu.steps, cpu.input_size) == (8, 20, 64)
    assert "--seq-len 64" in cpu.shrunk and "1024 tokens" in cpu.shrunk and "on GPUs 16" in cpu.shrunk
    gpu = job_size("gpt2", DeviceKind.CUDA)
    assert (gpu.batch_per_device, gpu.input_size, gpu.batch_default) == (16, None, True)
    assert Job("gpt2", DeviceKind.CUDA, gpu.batch_per_device, gpu.steps).input == TokenInput(1024, 50257)
    assert job_size("resnet50", DeviceKind.CUDA).batch_per_device == 256
    assert job_size("resnet50", DeviceKind.CPU).input_size == 64
