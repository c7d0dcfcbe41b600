"""`--decode gpu`: where it is refused (CPU devices, synthetic data, frameworks without a device
decoder), and the host's and the device's halves of the JPEG path against the host's pixels.

No GPU here: the device half runs on CPU tensors (torchvision decodes on the CPU in the tests),
which is the GPU path's arithmetic on another device.
"""

from __future__ import annotations

import pytest
from conftest import mgbench, one_line_error

from mgbench.common.config import RunConfig
from mgbench.common.errors import UsageError
from mgbench.common.job import Job
from mgbench.frameworks.registry import framework_spec
from mgbench.runner.plan import plan_runs


def test_gpu_decode_on_cpu_devices_is_one_line_exit_2(tmp_path):
    done = mgbench("compare", "--frameworks", "pytorch", "--device", "cpu", "--dataset", "imagefolder:/nowhere",
                   "--decode", "gpu", "--out", str(tmp_path / "run"))  # fmt: skip
    assert "--decode gpu decodes on the GPUs" in one_line_error(done)
    assert not (tmp_path / "run").exists()


def test_gpu_decode_of_synthetic_data_is_refused():
    with pytest.raises(UsageError, match="synthetic data has nothing to decode"):
        Job("tiny", "cuda", 2, 4, decode="gpu")
    assert Job("tiny", "cuda", 2, 4, dataset="imagefolder:/x", decode="gpu").decode.on_device
    assert not Job("tiny", "cpu", 2, 4).decode.on_device


def test_a_framework_without_a_device_decoder_gets_an_unsupported_row_with_its_reason():
    job = Job("tiny", "cuda", 2, 4, dataset="imagefolder:/x", decode="gpu", data_format="channels_first")
    runs = plan_runs(job, ["pytorch", "horovod", "gluon"], None, [1], "weak")
    refused = {run.config.framework: run.refusal for run in runs}
    assert refused["pytorch"] is None and refused["horovod"] is None
    status, reason = refused["gluon"]
    assert status == "unsupported"
    assert reason == "gluon cannot decode on the GPU (--decode gpu): its loader decodes on the host only here"


def test_a_config_read_back_without_decode_decodes_on_the_host():
    config = RunConfig("pytorch", "ddp", "tiny", 1, "cpu", 2, 4)
    data = config.to_dict()
    del data["decode"]
    assert RunConfig.from_dict(data).decode == "cpu"
    assert RunConfig.from_json(config.with_changes(device_kind="cuda", dataset="imagefolder:/x", decode="gpu")
                               .to_json()).decode.on_device  # fmt: skip
    assert framework_spec("pytorch").capabilities.gpu_decoder == "nvJPEG (torchvision.io.decode_jpeg)"
