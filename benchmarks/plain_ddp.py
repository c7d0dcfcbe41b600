"""Reference point for the PyTorch adapter: the plainest DDP loop on GPU-resident data.

No mgbench code: torchvision model, bf16 autocast, channels_last, SGD, one fixed batch already
on the GPU, 20 warm-up steps, then the median of timed steps. The adapter's `ddp` figure is
compared against this.

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

    times = []
    for step in range(args.warmup + args.steps):
        torch.cuda.synchronize()
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = model(images)
        loss = criterion(out.float(), labels)
        loss.backward()
        optimizer.step()
        torch.cuda.synchronize()
        if step >= args.warmup:
            times.append(time.perf_counter() - start)
    if rank == 0:
        median = statistics.median(times)
        print(
            f"plain-ddp {args.model} gpus={world} batch/gpu={args.batch}: {world * args.batch / median:.0f} img/s (median step {median * 1000:.1f} ms)"
        )
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
