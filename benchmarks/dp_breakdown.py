"""Where nn.DataParallel's step time goes: each phase timed alone, with a sync between phases.

Phases: scatter the batch from GPU 0, replicate the module to every GPU, forward of the
replicas in threads (parallel_apply), gather outputs to GPU 0, loss + backward (gradients
reduced onto GPU 0 through the replication's autograd), optimizer step. For comparison it
also times one replica's forward alone on its GPU, to show the cost of running replicas in
Python threads.

    python benchmarks/dp_breakdown.py --model resnet50 --batch-per-gpu 128 --gpus 2
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch
import torchvision
from torch.nn import parallel


def timed(fn: Callable[[], object], devices: list[int]) -> tuple[float, object]:
    for d in devices:
        torch.cuda.synchronize(d)
    start = time.perf_counter()
    value = fn()
    for d in devices:
        torch.cuda.synchronize(d)
    return time.perf_counter() - start, value


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="resnet50")
    parser.add_argument("--batch-per-gpu", type=int, default=128)
    parser.add_argument("--gpus", type=int, default=torch.cuda.device_count())
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--cudnn-benchmark", type=int, default=1, help="1: autotune convolutions (as the adapter does)")
    args = parser.parse_args()
    devices = list(range(args.gpus))
    torch.backends.cudnn.benchmark = bool(args.cudnn_benchmark)
    classes = 14 if args.model == "densenet121" else 1000
    model = getattr(torchvision.models, args.model)(weights=None, num_classes=classes)
    model = model.cuda(0).to(memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    images = torch.randn(args.batch_per_gpu * args.gpus, 3, 224, 224, device="cuda:0").contiguous(
        memory_format=torch.channels_last
    )
    labels = torch.randint(0, classes, (len(images),), device="cuda:0")
    criterion = torch.nn.CrossEntropyLoss()
    phases: dict[str, list[float]] = {
        k: [] for k in ("scatter", "replicate", "forward", "gather", "backward", "step", "alone")
    }
    for step in range(args.steps + 5):
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            t_scatter, inputs = timed(lambda: parallel.scatter(images, devices), devices)
            t_rep, replicas = timed(lambda: parallel.replicate(model, devices), devices)
            t_fwd, outputs = timed(lambda: parallel.parallel_apply(replicas, [(x,) for x in inputs]), devices)
            t_gather, out = timed(lambda: parallel.gather(outputs, 0), devices)
        t_bwd, _ = timed(lambda: criterion(out.float(), labels).backward(), devices)
        t_step, _ = timed(optimizer.step, devices)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            t_alone, _ = timed(lambda: model(inputs[0]), [0])
        if step >= 5:
            for name, value in zip(phases, (t_scatter, t_rep, t_fwd, t_gather, t_bwd, t_step, t_alone)):
                phases[name].append(value)
    total = sum(statistics.median(v) for k, v in phases.items() if k != "alone")
    print(
        f"dp breakdown {args.model} gpus={args.gpus} batch/gpu={args.batch_per_gpu} cudnn.benchmark={args.cudnn_benchmark} (median ms):"
    )
    for name, values in phases.items():
        print(f"  {name:9s} {statistics.median(values) * 1000:8.1f}")
    print(f"  sum of phases {total * 1000:.1f} ms -> {len(images) / total:.0f} img/s")


if __name__ == "__main__":
    main()
