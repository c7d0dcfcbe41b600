"""benchmarks/host_speed.py: the host's speed through a GPU command, and its summary."""

import pytest
from conftest import benchmark_script


@pytest.fixture(scope="module")
def host_speed():
    return benchmark_script("host_speed")


def test_the_summary_reads_the_loop_times_the_log_holds(host_speed, tmp_path):
    log = tmp_path / "host-speed.log"
    log.write_text("".join(f"{1000.0 + second:.1f} {ms:.2f}\n" for second, ms in enumerate(range(10, 21))))
    assert host_speed.summary(log) == "host loop ms: p10 11.0, median 15.0, p90 19.0 over 11 samples"


def test_a_log_of_one_sample_is_summarised(host_speed, tmp_path):
    log = tmp_path / "host-speed.log"
    log.write_text("1000.0 21.70\n")
    assert host_speed.summary(log) == "host loop ms: p10 21.7, median 21.7, p90 21.7 over 1 samples"
