"""AdapterBase: what every adapter inherits: the peak memory a row reports, and the checks
that refuse a job before anything is built."""

import resource

import pytest

from mgbench.common.config import RunConfig
from mgbench.common.errors import UsageError
from mgbench.common.protocol import AdapterBase


class ReportsDeviceMemory(AdapterBase):
    framework = "probe"

    def peak_device_memory_bytes(self) -> int | None:
        return 123


def adapter(cls: type[AdapterBase], device_kind: str) -> AdapterBase:
    trainer = cls("any")
    trainer.accept(RunConfig("probe", "any", "tiny", 1, device_kind, 4, 2))
    return trainer


def test_cpu_rows_report_the_process_peak_host_memory():
    peak = adapter(ReportsDeviceMemory, "cpu").peak_memory_bytes()
    assert peak == resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 > 0


def test_cuda_rows_report_the_framework_device_peak_or_none_where_it_gives_none():
    assert adapter(ReportsDeviceMemory, "cuda").peak_memory_bytes() == 123
    assert adapter(AdapterBase, "cuda").peak_memory_bytes() is None


class ReadsEpochs(AdapterBase):
    framework = "reader"

    def steps_per_epoch(self): ...

    def epoch_batches(self, epoch): ...

    def set_learning_rate(self, learning_rate): ...

    def setup(self, config): ...

    def batches(self): ...

    def train_step(self, batch): ...

    def synchronize(self): ...

    def last_loss(self): ...

    def evaluate(self): ...

    def framework_versions(self): ...

    def save_state(self, path): ...

    def close(self): ...


def test_an_adapter_without_a_real_data_loader_refuses_a_real_dataset():
    real = RunConfig("probe", "any", "tiny", 1, "cpu", 4, 2, dataset="chestxray:/data/nih")
    with pytest.raises(UsageError, match="the probe adapter cannot read dataset 'chestxray:/data/nih'"):
        ReportsDeviceMemory("any").accept(real)
    ReadsEpochs("any").accept(real)
