"""GPU memory as each framework declares it (`frameworks/memory.py`): its out-of-memory error told
from a crash by its own words, wherever in the log they are, and `--gpu-memory-gb` capping it with
its own setting. No GPU here: NVML and torch's CUDA calls stand in."""

from types import SimpleNamespace

import pytest
from conftest import mgbench, one_line_error

import mgbench.frameworks.memory as memory
from mgbench.core.config import RunConfig
from mgbench.frameworks.memory import GIB
from mgbench.frameworks.registry import framework_spec
from mgbench.records.results import Status
from mgbench.runner.orchestrator import classify_failure, failure_cause

BANNER = "\n".join(
    [
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
        "============================================================",
        "Root Cause (first observed failure):",
        "[0]:",
        "  exitcode  : 1 (pid: 1234)",
        "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
    ]
    * 10
)
"""torchrun's banner after a worker died, 60 lines: more than a log's tail."""
OUT_OF_MEMORY = {
    "pytorch": "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 784.00 MiB. GPU 0 has a "
    "total capacity of 79.19 GiB of which 210.00 MiB is free.",
    "keras-torch": "[rank0]: RuntimeError: Exception encountered when calling Functional.call().\n[rank0]: \n"
    "[rank0]: CUDA out of memory. Tried to allocate 1.53 GiB. GPU 0 has a total capacity of 79.19 GiB",
    "horovod": "[0]<stderr>:torch.OutOfMemoryError: Exception encountered when calling Conv2D.call().",
    "keras-jax": "jaxlib._jax.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate "
    "26843545600 bytes.",
    "keras-tf": "tensorflow.python.framework.errors_impl.ResourceExhaustedError: Graph execution error:\n\n"
    "OOM when allocating tensor with shape[256,64,112,112] and type float on /device:GPU:0 by allocator GPU_0_bfc",
    "chainer": "[0]<stderr>:cupy.cuda.memory.OutOfMemoryError: Out of memory allocating 1,073,741,824 bytes "
    "(allocated so far: 79,456,123,904 bytes).",
    "gluon": "mxnet.base.MXNetError: [12:00:00] src/storage/./pooled_storage_manager.h:161: "
    "cudaMalloc retry failed: out of memory",
}
"""How each framework's run ends when an allocation on the GPU fails (Keras over PyTorch: Keras'
line first, the exception's type lost, torch's text below it)."""
MENTIONS_MEMORY = {
    "keras-tf": "W bfc_allocator.cc:290] Allocator (GPU_0_bfc) ran out of memory trying to allocate 2.16GiB "
    "with freed_by_count=0. The caller indicates that this is not a failure, but this may mean that there "
    "could be performance gains if more memory were available.\nValueError: shapes (256, 10) and (256, 14) differ",
    "pytorch": "step 10/100: 2,095 img/s, peak memory 43.1 GiB of 79.2 GiB\n"
    "[rank0]: RuntimeError: NCCL error: unhandled system error",
    "gluon": "memory pool: MXNET_GPU_MEM_POOL_RESERVE=5, out of memory errors retried once\n"
    "mxnet.base.MXNetError: Check failed: shape_.ndim() == 4",
    "keras-jax": "jax: Out of memory? set XLA_PYTHON_CLIENT_MEM_FRACTION\nValueError: bad shard",
}
"""Failed runs whose logs only mention memory: TF's allocator warning that it carried on, a peak,
a setting's name. They are crashes."""


def classified(framework: str, log: str) -> Status:
    return classify_failure(False, failure_cause(log, 1), log, framework_spec(framework).memory)


@pytest.mark.parametrize("framework", sorted(OUT_OF_MEMORY))
def test_each_frameworks_out_of_memory_is_told_from_its_cause_or_log_under_a_launchers_banner(framework):
    assert classified(framework, f"{OUT_OF_MEMORY[framework]}\n{BANNER}\n") == Status.OOM
    assert classify_failure(True, "", OUT_OF_MEMORY[framework], framework_spec(framework).memory) == Status.TIMEOUT


@pytest.mark.parametrize("framework", sorted(MENTIONS_MEMORY))
def test_a_log_that_merely_mentions_memory_is_a_crash(framework):
    assert classified(framework, f"{MENTIONS_MEMORY[framework]}\n{BANNER}\n") == Status.FAILED


def fake_gpus(monkeypatch, gib: float, count: int = 2) -> None:
    """NVML seeing `count` GPUs of `gib` GiB each, all visible."""
    nvml = SimpleNamespace(
        nvmlDeviceGetCount=lambda: count,
        nvmlDeviceGetHandleByIndex=lambda index: index,
        nvmlDeviceGetMemoryInfo=lambda handle: SimpleNamespace(total=int(gib * GIB)),
    )
    monkeypatch.setattr(memory, "nvml_or_none", lambda: nvml)
    monkeypatch.setattr(memory, "visible_gpus", lambda: [SimpleNamespace(index=i) for i in range(count)])


def gpu_run(framework: str, strategy: str, gpu_memory_gb: float | None) -> RunConfig:
    return RunConfig.flat(framework, strategy, "tiny", 2, "cuda", 8, 4, gpu_memory_gb=gpu_memory_gb)


RUNS = {
    "pytorch": "ddp",
    "horovod": "hvd",
    "keras-torch": "ddp",
    "keras-jax": "jax-shard-map",
    "keras-tf": "mirrored",
    "tensorflow": "mirrored",
    "chainer": "chainermn",
    "gluon": "device",
}
CAP_VARIABLES = {"XLA_PYTHON_CLIENT_MEM_FRACTION", "MXNET_GPU_MEM_POOL_RESERVE"}


def test_a_cap_gives_jax_its_memory_fraction_and_mxnet_its_reserve_and_no_cap_leaves_them_unset(monkeypatch):
    fake_gpus(monkeypatch, 80)
    capped = {name: framework_spec(name).variables_for(gpu_run(name, s, 24)) for name, s in RUNS.items()}
    assert capped["keras-jax"]["XLA_PYTHON_CLIENT_MEM_FRACTION"] == "0.3000"  # 24 of 80 GiB
    assert capped["gluon"]["MXNET_GPU_MEM_POOL_RESERVE"] == "70"
    others = {name: variables for name, variables in capped.items() if name not in ("keras-jax", "gluon")}
    assert all(not CAP_VARIABLES & set(variables) for variables in others.values())  # their adapters cap them
    for cap in (None, 80, 100):  # no cap, or one at or above the GPUs' memory: nothing is capped
        for name, strategy in RUNS.items():
            assert not CAP_VARIABLES & set(framework_spec(name).variables_for(gpu_run(name, strategy, cap)))
    assert memory.memory_share(gpu_run("pytorch", "ddp", 24)) == pytest.approx(0.3)
    assert memory.cap_bytes(gpu_run("pytorch", "ddp", 24)) == 24 * GIB


def test_every_builtin_framework_declares_how_it_is_capped():
    settings = {name: framework_spec(name).memory.cap.setting for name in RUNS}
    assert settings["pytorch"] == settings["horovod"] == settings["keras-torch"]
    assert "set_per_process_memory_fraction" in settings["pytorch"]
    assert "memory_limit" in settings["keras-tf"] and "set_limit" in settings["chainer"]


def test_torch_is_held_to_the_capped_share_of_each_of_its_devices(monkeypatch):
    torch = pytest.importorskip("torch")
    from mgbench.frameworks.pytorch.adapter import cap_memory

    calls = []
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: SimpleNamespace(total_memory=80 * GIB))
    monkeypatch.setattr(
        torch.cuda, "set_per_process_memory_fraction", lambda share, device: calls.append((share, device))
    )
    devices = [torch.device("cuda", 0), torch.device("cuda", 1)]
    cap_memory(gpu_run("pytorch", "ddp", 24), devices)
    assert calls == [(pytest.approx(0.3), devices[0]), (pytest.approx(0.3), devices[1])]
    calls.clear()
    cap_memory(gpu_run("pytorch", "ddp", None), devices)
    cap_memory(gpu_run("pytorch", "ddp", 96), devices)
    assert calls == []


@pytest.mark.parametrize(
    "value, message",
    [
        ("0", "--gpu-memory-gb takes a number of GiB above 0, got 0.0"),
        ("-8", "--gpu-memory-gb takes a number of GiB above 0, got -8.0"),
        ("nan", "--gpu-memory-gb takes a number of GiB above 0, got nan"),
        ("inf", "--gpu-memory-gb takes a number of GiB above 0, got inf"),
        ("abc", "argument --gpu-memory-gb: invalid float value: 'abc'"),
        ("24", "--gpu-memory-gb caps GPU memory, and this job runs on CPU devices"),
    ],
)
def test_a_bad_gpu_memory_cap_is_one_line_and_exit_2(tmp_path, value, message):
    done = mgbench("compare", "--frameworks", "fake", "--gpu-memory-gb", value, "--out", str(tmp_path / "out"))
    assert message in one_line_error(done)
    assert not (tmp_path / "out").exists()
