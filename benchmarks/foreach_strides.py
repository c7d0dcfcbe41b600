"""What a gradient laid out unlike its weight costs torch's optimizer step, on one GPU.

torch's multi-tensor (foreach) SGD takes its fast path, a few kernels for the whole parameter
list, only when every gradient has its weight's strides; otherwise it runs a kernel per tensor
and operation. A channels_last model whose gradients were replaced by contiguous copies (as
Horovod does with what its compression hook hands it) is in the second case. This times the
step, host and device, for ResNet-50's channels_last weights with gradients in their weights'
layout and with contiguous gradients, and the fused step for comparison:

    python3 benchmarks/foreach_strides.py [--model resnet50] [--steps 50]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torchvision


def timed_steps(model: torch.nn.Module, contiguous: bool, fused: bool, steps: int) -> tuple[float, float]:
    """Median host time of `optimizer.step()` and device time per step, in ms."""
    for parameter in model.parameters():
        gradient = torch.randn_like(parameter)  # randn_like keeps the weight's strides
        parameter.grad = gradient.contiguous() if contiguous else gradient
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-6, momentum=0.9, weight_decay=1e-4, fused=fused or None)
    for _ in range(5):
        optimizer.step()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    host = []
    start.record()
    for _ in range(steps):
        began = time.perf_counter()
        optimizer.step()
        host.append(time.perf_counter() - began)
    end.record()
    torch.cuda.synchronize()
    return statistics.median(host) * 1000, start.elapsed_time(end) / steps


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="resnet50")
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    model = getattr(torchvision.models, args.model)().cuda().to(memory_format=torch.channels_last)
    mismatched = sum(1 for p in model.parameters() if p.dim() == 4 and not p.is_contiguous() and p.shape[2:] != (1, 1))
    print(f"{args.model}: {sum(1 for _ in model.parameters())} weights, {mismatched} channels_last and not contiguous")
    for label, contiguous, fused in (
        ("gradients in the weights' strides, foreach", False, False),
        ("contiguous gradients, foreach", True, False),
        ("gradients in the weights' strides, fused", False, True),
    ):
        host, device = timed_steps(model, contiguous, fused, args.steps)
        print(f"foreach-strides {label}: host {host:.2f} ms, device {device:.2f} ms per step")


if __name__ == "__main__":
    main()
