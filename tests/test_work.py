"""The work of a training image and the device's peak: FLOP counts against published figures,
the peak a row's share is taken against, and the figures put into rows."""

import dataclasses
import json
import os
import subprocess
import sys
from importlib import metadata

import pytest

from mgbench.core.config import RunConfig
from mgbench.core.models import model_spec
from mgbench.records.bandwidth import BandwidthReport
from mgbench.records.peak import MEASURED, ModelWork, annotate_work, reference_peak, vendor_peak
from mgbench.records.results import RunResult

count_work = pytest.importorskip("mgbench.frameworks.pytorch.flops", reason="PyTorch is not installed").count_work


@pytest.mark.parametrize(
    "model, image_size, published_gmacs",
    [("resnet50", 224, 4.09), ("densenet121", 224, 2.83), ("inception_v3", 299, 5.71)],
)
def test_training_flops_per_sample_match_the_published_forward_counts(model, image_size, published_gmacs):
    """Forward multiply-adds per image as torchvision's model documentation publishes them
    (docs.pytorch.org/vision/stable/models.html, column GFLOPS, which counts multiply-adds):
    ResNet-50 4.09 at 224 px, DenseNet-121 2.83 at 224 px, Inception-v3 5.71 at 299 px.

    The count is of a training step, a multiply-add as 2 FLOPs: forward 2 x GMACs, backward about
    twice the forward (gradients of inputs and weights), less the first convolution's input
    gradient, which nothing needs; so within 5% of 6 x the published GMACs, and no more."""
    work = count_work(model_spec(model), image_size)
    assert work.flops_per_sample == pytest.approx(6 * published_gmacs * 1e9, rel=0.05)
    assert work.flops_per_sample <= 6 * published_gmacs * 1e9 * 1.005


def test_the_count_follows_the_input_size():
    """Convolutions scale with the pixels: ResNet-50 at 448 px (every feature map twice as wide
    and high as at 224) is 4 times 224 px's work, but for the classifier, 2 M multiply-adds of
    4.1 G, which does not scale."""
    full = count_work(model_spec("resnet50"), 224).flops_per_sample
    assert count_work(model_spec("resnet50"), 448).flops_per_sample == pytest.approx(4 * full, rel=0.01)


def test_saved_activations_are_counted_per_sample_without_the_parameters():
    """The tiny model at 32 px keeps for its backward: the input of the first convolution
    (3x32x32), the first ReLU's output (16x32x32, also what max-pooling reads), the pooling's
    indices and output (16x16x16 each), the second ReLU's output (32x16x16, also what average
    pooling reads) and the features the linear layer reads (32); not the weights, nor the
    linear layer's transposed view of its weight."""
    work = count_work(model_spec("tiny"), 32)
    expected = 3 * 32 * 32 + 16 * 32 * 32 + 2 * 16 * 16 * 16 + 32 * 16 * 16 + 32
    assert work.saved_elements_per_sample == expected


@pytest.mark.parametrize(
    "name, precision, expected",
    [
        ("NVIDIA H200", "bf16", (989.5, "vendor: NVIDIA H200 SXM")),
        ("NVIDIA H100 80GB HBM3", "fp32", (67.0, "vendor: NVIDIA H100 SXM")),
        ("NVIDIA H100 PCIe", "bf16", (756.5, "vendor: NVIDIA H100 PCIe")),
        ("cpu (2 threads)", "fp32", None),
    ],
)
def test_vendor_peaks_by_device_name(name, precision, expected):
    assert vendor_peak(name, precision) == expected


def test_the_measured_matmul_is_the_reference_where_it_is_of_this_kind_of_device_and_precision():
    measured = BandwidthReport("cuda", 1, "nccl", matmul_tflops={"bf16": 790.0, "fp32": 52.0})
    assert reference_peak("NVIDIA H200", "cuda", "bf16", measured) == (790.0, MEASURED)
    assert reference_peak("NVIDIA H200", "cuda", "fp16", measured) == (989.5, "vendor: NVIDIA H200 SXM")
    assert reference_peak("NVIDIA H200", "cuda", "bf16", None) == (989.5, "vendor: NVIDIA H200 SXM")
    on_cpu = BandwidthReport("cpu", 2, "gloo", matmul_tflops={"fp32": 0.05})
    assert reference_peak("NVIDIA H200", "cuda", "fp32", on_cpu) == (67.0, "vendor: NVIDIA H200 SXM")


def test_a_row_gets_its_tflops_and_share_of_the_peak_of_all_its_devices():
    """The issue's figure: a ResNet-50 step of about 25 GFLOP per image at 5481 img/s is about
    135 TFLOP/s, 14% of one H200's bf16 peak, 17% of a measured 790."""
    config = RunConfig.flat("keras-jax", "jax-shard-map", "resnet50", 2, "cuda", 128, 50, precision="bf16")
    row = RunResult.flat(config, "ok", samples_per_sec=2 * 5481.0, device_names=["NVIDIA H200", "NVIDIA H200"])
    work = ModelWork(flops_per_sample=24.6e9, saved_elements_per_sample=22.4e6)
    annotate_work(row, work, BandwidthReport("cuda", 2, "nccl", matmul_tflops={"bf16": 790.0}))
    assert row.limit.achieved_tflops == pytest.approx(2 * 134.8, rel=1e-3)
    assert (
        row.limit.peak_tflops == 790.0 and row.limit.peak_source == MEASURED and row.limit.vendor_peak_tflops == 989.5
    )
    assert row.limit.peak_fraction == pytest.approx(134.8 / 790.0, rel=1e-3)
    assert row.limit.activation_bytes_estimate == int(22.4e6 * 128 * 2)
    failed = RunResult.flat(config, "failed")
    annotate_work(failed, work, None)
    assert failed.limit.flops_per_sample is None


def test_counts_are_kept_in_the_cache_file_and_read_from_it(tmp_path, monkeypatch):
    from mgbench.runner import counting

    monkeypatch.setenv(counting.CACHE_ENV, str(tmp_path / "work.json"))
    counting.model_work.cache_clear()
    counted = counting.model_work("tiny", 32)
    assert counted == count_work(model_spec("tiny"), 32)
    (key,) = json.loads((tmp_path / "work.json").read_text())
    assert key.startswith("tiny@32 torchvision ")
    # A later compare reads the file instead of counting again.
    (tmp_path / "work.json").write_text(json.dumps({key: {"flops_per_sample": 1.0, "saved_elements_per_sample": 2.0}}))
    counting.model_work.cache_clear()
    assert counting.model_work("tiny", 32) == ModelWork(1.0, 2.0)
    counting.model_work.cache_clear()


@pytest.mark.parametrize(
    "cache",
    [
        '["a list"]',
        '{"KEY": [1, 2]}',
        '{"KEY": {"flops_per_sample": 1.0}}',
        '{"KEY": {"flops_per_sample": "many", "saved_elements_per_sample": 2.0}}',
        '{"KEY": {"flops_per_sample": 1.0, "saved_elements_per_sample": 2.0, "from": "a later version"}}',
        '{"KEY": {"flops_per_sample": -1.0, "saved_elements_per_sample": 2.0}}',
        '{"KEY": {"flops_per_image": 1.0, "saved_elements_per_image": 2.0}}',
        "fifo",
    ],
    ids=["list", "entry-list", "field-missing", "text", "field-more", "negative", "per-image", "fifo"],
)
def test_a_cache_of_another_shape_or_no_file_is_counted_again_and_replaced(tmp_path, monkeypatch, cache):
    """What the cache holds is read back checked (`ModelWork.from_record`): an entry of another
    shape, another version's or a damaged one, is counted again, and a FIFO is never waited on."""
    from mgbench.datasets.check import time_limit
    from mgbench.runner import counting

    path = tmp_path / "work.json"
    monkeypatch.setenv(counting.CACHE_ENV, str(path))
    key = f"tiny@32 torchvision {metadata.version('torchvision')}"
    os.mkfifo(path) if cache == "fifo" else path.write_text(cache.replace("KEY", key))
    counting.model_work.cache_clear()
    with time_limit(60):
        assert counting.model_work("tiny", 32) == count_work(model_spec("tiny"), 32)
    counting.model_work.cache_clear()
    assert ModelWork.from_record(json.loads(path.read_text())[key]) == count_work(model_spec("tiny"), 32)


CLOSED_FORM_PLUGIN = '''
from dataclasses import dataclass

from mgbench.core.inputs import ImageInput
from mgbench.core.models import ModelSpec
from mgbench.core.objective import SOFTMAX_CROSS_ENTROPY
from mgbench.core.optimization import IMAGE_SGD
from mgbench.core.work import ModelWork, Work


@dataclass(frozen=True)
class LinearHead(Work):
    """A linear layer over the flattened RGB image: 2 FLOPs per weight forward and as many for the
    weights' gradient (the input's gradient nothing needs); the forward keeps its input."""

    classes: int

    def per_sample(self, model, input_size, count):
        inputs = 3 * input_size**2
        return ModelWork(flops_per_sample=4 * inputs * self.classes, saved_elements_per_sample=inputs)


ADDED_MODELS = (
    ModelSpec(
        "linear_head",
        ImageInput(8),
        10,
        SOFTMAX_CROSS_ENTROPY,
        "a linear layer over the image",
        1930,
        2,
        work=LinearHead(10),
        optimization=IMAGE_SGD,
    ),
)
'''


def test_a_model_declaring_a_closed_form_is_computed_from_it_at_the_jobs_input_not_counted(tmp_path, monkeypatch):
    """A model's work is what its declaration gives (`ModelSpec.work`): a plugin model's closed
    form, at the input size asked, with no counter run and nothing cached."""
    from mgbench.runner import counting

    (tmp_path / "closed_form_plugin.py").write_text(CLOSED_FORM_PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("MGBENCH_PLUGINS", "closed_form_plugin")
    monkeypatch.setenv(counting.CACHE_ENV, str(tmp_path / "work.json"))
    counting.model_work.cache_clear()
    assert counting.model_work("linear_head", 8) == ModelWork(4 * 3 * 8 * 8 * 10, 3 * 8 * 8)
    assert counting.model_work("linear_head", 16) == ModelWork(4 * 3 * 16 * 16 * 10, 3 * 16 * 16)
    assert not (tmp_path / "work.json").exists()
    counting.model_work.cache_clear()


@pytest.mark.slow
def test_the_count_runs_in_the_pytorch_environment_and_the_counting_process_imports_no_torch(tmp_path):
    """The runner counts on the reference architecture through the model's declaration, by
    running PyTorch's counter in its own process: the figures are that counter's, exactly, and
    the process that asked never imports torch."""
    code = (
        "import dataclasses, json, sys; from mgbench.runner.counting import model_work; "
        "print(json.dumps([dataclasses.asdict(model_work('tiny', 32)), 'torch' in sys.modules]))"
    )
    env = {**os.environ, "MGBENCH_WORK_CACHE": str(tmp_path / "work.json")}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert json.loads(done.stdout) == [dataclasses.asdict(count_work(model_spec("tiny"), 32)), False], done.stderr
