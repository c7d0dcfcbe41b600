"""Reference point for the PyTorch adapter: the plainest DDP loop on GPU-resident data.

No mgbench code: torchvision model, bf16 autocast, channels_last, SGD, one fixed batch already
on the GPU, 20 warm-up steps, then the timed steps. The adapter's `ddp` figure is compared
against this, timed the same way (`--timing`):
- `window` (default, as mgbench times torch on GPU): a CUDA event after each step, no host
  synchronisation until the last step; throughput is the timed steps' images over their length
  on the device's clock, and the median step comes from the events;
- `sync`: the host synchronises after every step and the median of those steps gives the
  throughput (how this loop, and mgbench, timed steps before).

    torchrun --standalone --nproc-per-node N benchmarks/plain_ddp.py --model resnet50 --batch 128
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch
import torch.distributed as dist
import torchvision

NUM_CLASSES = {"resnet50": 1000, "densenet121": 14}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="resnet50", choices=sorted(NUM_CLASSES))
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--timing", choices=("window", "sync"), default="window")
    args = parser.parse_args()

    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
    torch.cuda.set_device(device)
    torch.backends.cudnn.benchmark = True
    classes = NUM_CLASSES[args.model]
    model = getattr(torchvision.models, args.model)(weights=None, num_classes=classes)
    model = model.to(device, memory_format=torch.channels_last)
    model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[device.index], gradient_as_bucket_view=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    images = torch.randn(args.batch, 3, 224, 224, device=device).contiguous(memory_format=torch.channels_last)
    if classes == 14:
        labels = (torch.rand(args.batch, classes, device=device) < 0.1).float()
        criterion = torch.nn.BCEWithLogitsLoss()
    else:
        labels = torch.randint(0, classes, (args.batch,), device=device)
        criterion = torch.nn.CrossEntropyLoss()

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = model(images)
        loss = criterion(out.float(), labels)
        loss.backward()
        optimizer.step()

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    if args.timing == "window":
        events = [torch.cuda.Event(enable_timing=True) for _ in range(args.steps + 1)]
        events[0].record()
        for index in range(args.steps):
            step()
            events[index + 1].record()
        torch.cuda.synchronize()
        times = [start.elapsed_time(end) / 1000 for start, end in zip(events, events[1:])]
        rate = world * args.batch * args.steps / sum(times)
    else:
        times = []
        for _ in range(args.steps):
            start = time.perf_counter()
            step()
            torch.cuda.synchronize()
            times.append(time.perf_counter() - start)
        rate = world * args.batch / statistics.median(times)
    if rank == 0:
        median = statistics.median(times)
        print(
            f"plain-ddp {args.model} gpus={world} batch/gpu={args.batch} timing={args.timing}: "
            f"{rate:.0f} img/s (median step {median * 1000:.1f} ms)"
        )
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
