"""How close a row is to what the device can do: the work of a training step and the device's peak.

The work (`core.work.ModelWork`) is what the model declares per sample (`ModelSpec.work`), once
per model and input size, the same for every framework training that model. The catalogue's
networks are counted on the reference (torchvision) architecture: `flops_per_sample` is the
forward and backward of one sample (an image) as `torch.utils.flop_counter` counts them (convolutions and
matrix products, a multiply-add counted as 2 FLOPs; the backward computes the gradients of the
inputs and of the weights, about twice the forward, less the first layer's input gradient, which
nothing needs). Normalisation, activations and the optimizer's update are not counted: they are
a few percent of the arithmetic and none of it runs on tensor cores. `ModelWork` also holds
the elements that forward saves for the backward per sample, whence an activation-memory estimate.

The peak is per device and per precision: the dense matrix product `mgbench bandwidth`
measures on this device (`BandwidthReport.matmul_tflops`) where the run folder has it, and the
vendor's figure beside it (`VENDOR_PEAKS`, dense: the datasheets' sparse tensor-core figures
halved). A row's `peak_fraction` is its achieved TFLOP/s over the peak of all its devices.
"""

from __future__ import annotations

from dataclasses import dataclass

from mgbench.core.work import ModelWork
from mgbench.records.bandwidth import BandwidthReport
from mgbench.records.results import RunResult

TERA = 1e12
BYTES_PER_ELEMENT = {"fp32": 4, "bf16": 2, "fp16": 2}
"""What one saved activation element takes at each precision (autocast saves the low-precision tensors)."""
MEASURED = "measured dense matmul (bandwidth.json)"


@dataclass(frozen=True)
class VendorPeak:
    """A device's dense peak per precision in TFLOP/s, from its datasheet."""

    name_contains: str
    label: str
    tflops: dict[str, float]


VENDOR_PEAKS: tuple[VendorPeak, ...] = (
    VendorPeak("H100 PCIe", "NVIDIA H100 PCIe", {"bf16": 756.5, "fp16": 756.5, "fp32": 51.0}),
    VendorPeak("H100 NVL", "NVIDIA H100 NVL", {"bf16": 835.5, "fp16": 835.5, "fp32": 60.0}),
    VendorPeak("H100", "NVIDIA H100 SXM", {"bf16": 989.5, "fp16": 989.5, "fp32": 67.0}),
    VendorPeak("H200 NVL", "NVIDIA H200 NVL", {"bf16": 835.5, "fp16": 835.5, "fp32": 60.0}),
    VendorPeak("H200", "NVIDIA H200 SXM", {"bf16": 989.5, "fp16": 989.5, "fp32": 67.0}),
    VendorPeak("A100", "NVIDIA A100", {"bf16": 312.0, "fp16": 312.0, "fp32": 19.5}),
)
"""First match on the device's name wins (so the PCIe and NVL parts come before the SXM ones). fp32
is the CUDA cores' figure, not TF32: PyTorch's matrix products do not use TF32 by default."""


def vendor_peak(device_name: str, precision: str) -> tuple[float, str] | None:
    """The datasheet's dense TFLOP/s of this device at this precision and the part it names."""
    for peak in VENDOR_PEAKS:
        if peak.name_contains.lower() in device_name.lower() and precision in peak.tflops:
            return peak.tflops[precision], f"vendor: {peak.label}"
    return None


def achieved_tflops(flops_per_sample: float, samples_per_sec: float) -> float:
    return flops_per_sample * samples_per_sec / TERA


def reference_peak(
    device_name: str, device_kind: str, precision: str, bandwidth: BandwidthReport | None
) -> tuple[float, str] | None:
    """The peak a row's share is taken against: the measured matmul where the folder has one for
    this kind of device and precision, else the vendor's figure (None: neither is known)."""
    measured = bandwidth.matmul_tflops.get(precision) if bandwidth and bandwidth.device_kind == device_kind else None
    if measured:
        return measured, MEASURED
    return vendor_peak(device_name, precision)


def annotate_work(result: RunResult, work: ModelWork | None, bandwidth: BandwidthReport | None) -> None:
    """Put the model's FLOPs per sample, the achieved TFLOP/s, the peak and the share into an ok
    row, and the activation-memory estimate of its batch per device."""
    config = result.config
    if result.status != "ok" or work is None or not result.timing.samples_per_sec:
        return
    limit = result.limit
    limit.flops_per_sample = work.flops_per_sample
    limit.achieved_tflops = achieved_tflops(work.flops_per_sample, result.timing.samples_per_sec)
    limit.activation_bytes_estimate = int(
        work.saved_elements_per_sample * config.job.batch_per_device * BYTES_PER_ELEMENT[config.job.precision]
    )
    device = result.origin.device_names[0] if result.origin.device_names else ""
    vendor = vendor_peak(device, config.job.precision)
    limit.vendor_peak_tflops = vendor[0] if vendor else None
    peak = reference_peak(device, config.job.device_kind, config.job.precision, bandwidth)
    if peak is None:
        return
    limit.peak_tflops, limit.peak_source = peak
    limit.peak_fraction = limit.achieved_tflops / (limit.peak_tflops * config.devices)
