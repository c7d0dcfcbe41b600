"""Two implementations of ViT-B/16 in one plain training loop, no mgbench code: torchvision's
`vit_b_16` (what mgbench's PyTorch adapter builds) and timm's `vit_base_patch16_224` (what timm's
benchmark.py trains), to tell the model's own cost from the harness's.

Both: bf16 autocast, SGD with momentum, one fixed batch resident on the GPU, WARMUP steps, then
STEPS timed by CUDA events around the window (no host sync inside it); then one profiled step
whose CUDA kernels are counted and whose largest kernels by time are listed, so a difference in
the work each model launches shows by name.

    python3 benchmarks/vit_models.py [--batch 128] [--steps 40] [--compile]
"""

from __future__ import annotations

import argparse
from collections import Counter

import timm
import torch
import torchvision
from torch.profiler import ProfilerActivity, profile


def builders() -> dict[str, torch.nn.Module]:
    return {
        "torchvision vit_b_16": torchvision.models.vit_b_16(weights=None),
        "timm vit_base_patch16_224": timm.create_model("vit_base_patch16_224", pretrained=False),
    }


def step_fn(model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cuda", torch.bfloat16):
            loss = loss_fn(model(images).float(), labels)
        loss.backward()
        optimizer.step()

    return step


def measure(name: str, model: torch.nn.Module, args: argparse.Namespace) -> None:
    model = model.cuda().train()
    images = torch.randn(args.batch, 3, 224, 224, device="cuda")
    labels = torch.randint(0, 1000, (args.batch,), device="cuda")
    step = step_fn(torch.compile(model) if args.compile else model, images, labels)
    for _ in range(args.warmup):
        step()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(args.steps):
        step()
    end.record()
    end.synchronize()
    seconds = start.elapsed_time(end) / 1000
    with profile(activities=[ProfilerActivity.CUDA]) as profiled:
        step()
        torch.cuda.synchronize()
    kernels = [event for event in profiled.events() if event.device_type.name == "CUDA"]
    busy = Counter()
    for event in kernels:
        busy[event.name[:70]] += event.device_time
    parameters = sum(p.numel() for p in model.parameters())
    print(
        f"{name}: {args.batch * args.steps / seconds:.1f} img/s, {1000 * seconds / args.steps:.2f} ms/step, "
        f"{len(kernels)} kernels/step, {parameters:,} parameters"
    )
    for kernel, microseconds in busy.most_common(8):
        print(f"    {microseconds / 1000:7.2f} ms  {kernel}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--compile", action="store_true")
    args = parser.parse_args()
    print(
        "torch",
        torch.__version__,
        "torchvision",
        torchvision.__version__,
        "timm",
        timm.__version__,
        torch.cuda.get_device_name(),
    )
    for name, model in builders().items():
        measure(name, model, args)


if __name__ == "__main__":
    main()
