"""AdapterBase: what every adapter inherits, here its rule for the peak memory a row reports."""

import resource

from mgbench.common.config import RunConfig
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
