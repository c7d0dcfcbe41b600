"""Adapter: what every adapter inherits: the peak memory a row reports, and the optional parts of
the contract failing clearly where an adapter does not implement them."""

import resource

import pytest

from mgbench.core.config import RunConfig
from mgbench.training.protocol import Adapter


class ReportsDeviceMemory(Adapter):
    def peak_device_memory_bytes(self) -> int | None:
        return 123

    def peak_device_reserved_bytes(self) -> int | None:
        return 456


def adapter(cls: type[Adapter], device_kind: str) -> Adapter:
    adapter = cls("any")
    adapter.accept(RunConfig.flat("probe", "any", "tiny", 1, device_kind, 4, 2))
    return adapter


def test_cpu_rows_report_the_process_peak_host_memory():
    peak = adapter(ReportsDeviceMemory, "cpu").peak_memory_bytes()
    assert peak == resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 > 0


def test_cuda_rows_report_the_framework_device_peak_or_none_where_it_gives_none():
    assert adapter(ReportsDeviceMemory, "cuda").peak_memory_bytes() == 123
    assert adapter(Adapter, "cuda").peak_memory_bytes() is None


def test_reserved_memory_is_the_framework_allocator_on_cuda_and_none_on_cpu():
    assert adapter(ReportsDeviceMemory, "cuda").peak_reserved_bytes() == 456
    assert adapter(ReportsDeviceMemory, "cpu").peak_reserved_bytes() is None
    assert adapter(Adapter, "cuda").peak_reserved_bytes() is None


def test_optional_parts_of_the_contract_say_which_adapter_lacks_them():
    plain = Adapter("any")
    with pytest.raises(NotImplementedError, match="Adapter has no real-data loader"):
        plain.steps_per_epoch()
    with pytest.raises(NotImplementedError, match="Adapter has no profiler"):
        plain.profile(lambda: None, None)
