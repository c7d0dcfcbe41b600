"""Reference point for the PyTorch and Horovod adapters: the plainest data-parallel loop on
GPU-resident data.

No mgbench code but the gradient hand-over under test: torchvision model, bf16 autocast,
channels_last, SGD, one fixed batch already on the GPU, 20 warm-up steps, then the timed steps.
`--exchange` picks how gradients are averaged:
- `ddp` (under torchrun): DistributedDataParallel;
- `hvd-view` (under horovodrun): Horovod's DistributedOptimizer, each gradient handed over as a
  contiguous view of its own memory, as the Horovod adapter does
  (mgbench/frameworks/horovod/exchange.py);
- `hvd-copy`: the same, each channels_last gradient handed over as a contiguous copy, which
  Horovod then sets as the gradient (the weights keep channels_last strides, the gradients not).

The adapter's `ddp` figure is compared against this, timed the same way (`--timing`):
- `window` (default, as mgbench times torch on GPU): a CUDA event after each step, no host
  synchronisation until the last step; throughput is the timed steps' images over their length
  on the device's clock, and the median step comes from the events;
- `sync`: the host synchronises after every step and the median of those steps gives the
  throughput (how this loop, and mgbench, timed steps before).

    torchrun --standalone --nproc-per-node N benchmarks/plain_ddp.py --model resnet50 --batch 128
    horovodrun -np N python3 benchmarks/plain_ddp.py --exchange hvd-view
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


class Copied:
    """Horovod compression hook handing each gradient over as a contiguous copy."""

    @staticmethod
    def compress(tensor: torch.Tensor) -> tuple[torch.Tensor, None]:
        return tensor.contiguous(), None

    @staticmethod
    def decompress(tensor: torch.Tensor, context: None) -> torch.Tensor:
        return tensor


class Exchange:
    """Process group and gradient averaging of one `--exchange`: rank, world size, local device."""

    def __init__(self, name: str) -> None:
        self.name = name
        if name == "ddp":
            dist.init_process_group("nccl")
            self.rank, self.world, local = dist.get_rank(), dist.get_world_size(), int(os.environ["LOCAL_RANK"])
        else:
            import horovod.torch as hvd

            hvd.init()
            self.hvd = hvd
            self.rank, self.world, local = hvd.rank(), hvd.size(), hvd.local_rank()
        self.device = torch.device("cuda", local)

    def wrap(self, model: torch.nn.Module) -> torch.nn.Module:
        if self.name == "ddp":
            return torch.nn.parallel.DistributedDataParallel(
                model, device_ids=[self.device.index], gradient_as_bucket_view=True
            )
        return model

    def optimizer(self, model: torch.nn.Module) -> torch.optim.Optimizer:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        if self.name == "ddp":
            return optimizer
        from mgbench.frameworks.horovod.exchange import InPlaceLayout

        compression = InPlaceLayout if self.name == "hvd-view" else Copied
        return self.hvd.DistributedOptimizer(
            optimizer, named_parameters=model.named_parameters(), op=self.hvd.Average, compression=compression
        )

    def close(self) -> None:
        if self.name == "ddp":
            dist.destroy_process_group()
        else:
            self.hvd.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="resnet50", choices=sorted(NUM_CLASSES))
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--timing", choices=("window", "sync"), default="window")
    parser.add_argument("--exchange", choices=("ddp", "hvd-view", "hvd-copy"), default="ddp")
    args = parser.parse_args()

    exchange = Exchange(args.exchange)
    rank, world, device = exchange.rank, exchange.world, exchange.device
    torch.cuda.set_device(device)
    torch.backends.cudnn.benchmark = True
    classes = NUM_CLASSES[args.model]
    model = getattr(torchvision.models, args.model)(weights=None, num_classes=classes)
    model = model.to(device, memory_format=torch.channels_last)
    model = exchange.wrap(model)
    optimizer = exchange.optimizer(model)
    images = torch.randn(args.batch, 3, 224, 224, device=device).contiguous(memory_format=torch.channels_last)
    if classes == 14:
        labels = (torch.rand(args.batch, classes, device=device) < 0.1).float()
        criterion = torch.nn.BCEWithLogitsLoss()
    else:
        labels = torch.randint(0, classes, (args.batch,), device=device)
        criterion = torch.nn.CrossEntropyLoss()

    def step() -> None:
        optimizer.zero_grad()  # sets them to None (torch >= 2.0; Horovod's takes no argument)
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
            f"plain-{args.exchange} {args.model} gpus={world} batch/gpu={args.batch} timing={args.timing}: "
            f"{rate:.0f} img/s (median step {median * 1000:.1f} ms)"
        )
    exchange.close()


if __name__ == "__main__":
    main()
