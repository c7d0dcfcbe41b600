"""`mgbench env`: NVML readings, the `nvidia-smi topo -m` parser, and the warnings on canned data."""

from types import SimpleNamespace

from conftest import mgbench

from mgbench.cli.envreport import render
from mgbench.machine.host import gpu_environment
from mgbench.machine.topology import clock_warnings, link_warnings, nvidia_smi_topology, parse_topology

# As printed by nvidia-smi 550 on a 4-GPU PCIe machine with one NIC (tabs as nvidia-smi uses them).
TOPO = (
    "\tGPU0\tGPU1\tGPU2\tGPU3\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
    "GPU0\t X \tPIX\tPHB\tPHB\tSYS\t0-11\t0\t\tN/A\n"
    "GPU1\tPIX\t X \tPHB\tPHB\tSYS\t0-11\t0\t\tN/A\n"
    "GPU2\tPHB\tPHB\t X \tPIX\tSYS\t0-11\t0\t\tN/A\n"
    "GPU3\tPHB\tPHB\tPIX\t X \tSYS\t0-11\t0\t\tN/A\n"
    "NIC0\tSYS\tSYS\tSYS\tSYS\t X \t\t\t\t\n"
    "\n"
    "Legend:\n\n"
    "  X    = Self\n"
    "  PIX  = Connection traversing at most a single PCIe bridge\n"
    "  NV#  = Connection traversing a bonded set of # NVLinks\n"
    "\n"
    "NIC Legend:\n\n"
    "  NIC0: mlx5_0\n"
)

NVLINK_TOPO = "\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV12\t0-31\nGPU1\tNV12\t X \t0-31\n"


class FakeNvml(SimpleNamespace):
    """NVML as pynvml exposes it, answering from per-GPU dictionaries."""

    NVML_CLOCK_SM, NVML_CLOCK_MEM = 1, 2

    class NVMLError(Exception):
        pass

    def __init__(self, gpus):
        super().__init__(gpus=gpus)

    def nvmlDeviceGetCount(self):
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index):
        return self.gpus[index]

    def nvmlDeviceGetName(self, gpu):
        return gpu["name"]

    def nvmlDeviceGetMemoryInfo(self, gpu):
        return SimpleNamespace(total=gpu["memory"])

    def nvmlDeviceGetClockInfo(self, gpu, clock):
        return gpu["clocks"][clock]

    def nvmlDeviceGetMaxClockInfo(self, gpu, clock):
        return gpu["max_clocks"][clock]

    def nvmlDeviceGetCurrPcieLinkGeneration(self, gpu):
        return gpu["pcie"][0]

    def nvmlDeviceGetCurrPcieLinkWidth(self, gpu):
        return gpu["pcie"][1]

    def nvmlDeviceGetMaxPcieLinkGeneration(self, gpu):
        return 4

    def nvmlDeviceGetMaxPcieLinkWidth(self, gpu):
        return 16


def fake_gpu(mem_clock, pcie=(4, 16)):
    return {
        "name": "NVIDIA A100-PCIE-40GB",
        "memory": 40 * 2**30,
        "clocks": {1: 1410, 2: mem_clock},
        "max_clocks": {1: 1410, 2: 1215},
        "pcie": pcie,
    }


def test_nvml_readings_include_clocks_and_pcie_links():
    gpus = gpu_environment(FakeNvml([fake_gpu(1215), fake_gpu(405, pcie=(1, 16))]))
    assert gpus[0] == {
        "index": 0,
        "name": "NVIDIA A100-PCIE-40GB",
        "memory_total_mib": 40960,
        "sm_clock_mhz": 1410,
        "sm_clock_max_mhz": 1410,
        "mem_clock_mhz": 1215,
        "mem_clock_max_mhz": 1215,
        "pcie_link": "gen4 x16",
        "pcie_link_max": "gen4 x16",
    }
    assert gpus[1]["mem_clock_mhz"] == 405 and gpus[1]["pcie_link"] == "gen1 x16"


def test_different_memory_clocks_are_warned_about_equal_ones_are_not():
    gpus = gpu_environment(FakeNvml([fake_gpu(1215), fake_gpu(405, pcie=(1, 16))]))
    warnings = clock_warnings(gpus)
    assert warnings[0] == "GPUs run at different memory clocks now: GPU0 1215 MHz, GPU1 405 MHz"
    assert any("different PCIe links now" in w and "GPU1 gen1 x16" in w for w in warnings)
    assert not any("maximum" in w for w in warnings)
    assert clock_warnings(gpu_environment(FakeNvml([fake_gpu(1215), fake_gpu(1215)]))) == []


def test_topology_matrix_is_parsed_and_mixed_links_are_warned_about():
    links = parse_topology(TOPO)
    assert set(links) == {"GPU0", "GPU1", "GPU2", "GPU3"}
    assert links["GPU0"] == {"GPU1": "PIX", "GPU2": "PHB", "GPU3": "PHB"}
    assert links["GPU3"] == {"GPU0": "PHB", "GPU1": "PHB", "GPU2": "PIX"}
    (warning,) = link_warnings(links)
    assert "PHB: GPU0-GPU2, GPU0-GPU3, GPU1-GPU2, GPU1-GPU3" in warning and "PIX: GPU0-GPU1, GPU2-GPU3" in warning
    assert parse_topology(NVLINK_TOPO) == {"GPU0": {"GPU1": "NV12"}, "GPU1": {"GPU0": "NV12"}}
    assert link_warnings(parse_topology(NVLINK_TOPO)) == []
    assert parse_topology("") == {}


def test_report_text_shows_gpus_topology_and_warnings():
    report = {
        "python": "3.11.7",
        "cpu_count": 16,
        "gpus": gpu_environment(FakeNvml([fake_gpu(1215), fake_gpu(405)])),
        "topology": TOPO,
        "warnings": ["GPUs run at different memory clocks now: GPU0 1215 MHz, GPU1 405 MHz"],
        "frameworks": {
            "pytorch": {"interpreter": "/x/python", "installed": True, "missing": [], "versions": {"torch": "2.5.0"}},
            "keras-tf": {
                "interpreter": "/x/python",
                "installed": False,
                "missing": ["tensorflow"],
                "versions": {"keras": "3.15.1"},
            },
        },
    }
    text = render(report)
    assert "gpus: 2" in text and "mem_clock_mhz=405" in text and "pcie_link=gen4 x16" in text
    assert "topology (nvidia-smi topo -m):" in text and "  GPU0\t X \tPIX" in text
    assert "WARNING: GPUs run at different memory clocks now" in text
    assert "pytorch: torch 2.5.0 (/x/python)" in text
    assert "keras-tf: not installed: missing tensorflow (/x/python)" in text


def test_env_without_gpu_says_so():
    done = mgbench("env")
    assert done.returncode == 0, done.stderr
    assert "python: " in done.stdout and "cpu_count: " in done.stdout
    if "gpus: none" not in done.stdout:
        assert "sm_clock_mhz=" in done.stdout  # a GPU machine: clocks per GPU
    else:
        assert "no NVIDIA GPU" in done.stdout


def test_an_nvidia_smi_that_prints_a_byte_that_is_not_utf8_is_shown_not_a_crash(tmp_path, monkeypatch):
    smi = tmp_path / "nvidia-smi"
    smi.write_bytes(b"#!/bin/sh\nprintf '\\tGPU0\\tGPU1\\nGPU0\\t X \\tNV12 \\377\\n'\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    topology = nvidia_smi_topology()
    assert topology == "\tGPU0\tGPU1\nGPU0\t X \tNV12 \ufffd\n"
    assert parse_topology(topology) == {"GPU0": {"GPU1": "NV12"}}
