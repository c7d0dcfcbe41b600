"""What `--decode gpu` takes from the training step it shares the GPU with, part by part:
`python3 benchmarks/decode_overlap.py imagefolder:DIR [--batch 128] [--steps 40] [--compile reduce-overhead]`.

One process, one GPU, no loader workers: the JPEGs' bytes are read beforehand and their windows
drawn from their headers (as `--decode gpu`'s workers hand them over), so what separates the
rows is the GPU and the training process's threads, not the host's reading. Rows, images/s:

- decode alone (bytes in pageable and in pinned memory), decode + crop alone
  (`DecodedOnDevice`, what a step would take), crop alone (images decoded beforehand), each batch
  waited for before the next; the kernels and copies one batch's decode and its crop run, by GPU
  time;
- ResNet-50's step (bf16 autocast, channels_last, SGD with momentum) on one resident batch, then
  fed by `DecodedAhead` (decoded and cropped one step ahead on a thread and a side stream), with
  the thread only decoding (the step takes the resident batch) and only cropping, eager and with
  each `--compile` mode (torch.compile of the model). Eager, the thread's host work alone: each
  file's bytes copied to the GPU on its own, from pageable and from pinned memory (the decoder
  copies the files one by one), and 5 ms of pure Python a batch (the interpreter's lock). The
  step runs on a stream of the highest priority (`outranking`, as a `--decode gpu` run's) and the
  decode's at the default; two more rows run the step on the default stream instead, beside a
  side stream at the default and at a high priority. Each fed row gives the share of its time the
  training thread waited for a batch.
- `--profile DIR`: torch.profiler over a few steps of the first `--compile` mode (eager without
  one) fed as `--decode gpu` feeds them: the top operators by GPU and by CPU time, and the trace.

A fed row at its resident row's rate means the decode is hidden behind the step. The hardware
queues CUDA gives the process (`CUDA_DEVICE_MAX_CONNECTIONS`, which `--decode gpu` raises) are
what this process starts with: `gpu_decode.sh` runs it at CUDA's default and at the raised count.
"""

from __future__ import annotations

import argparse
import itertools
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
import torchvision

from mgbench.datasets.augment import Augmentation
from mgbench.datasets.encoded import EncodedTrainItems
from mgbench.datasets.resolve import describe_dataset
from mgbench.frameworks.pytorch.device_crop import cropped
from mgbench.frameworks.pytorch.device_decode import (
    DecodedAhead,
    DecodedOnDevice,
    EncodedBatch,
    PackedBatch,
    PlannedCollate,
    decoded_images,
    outranking,
)
from mgbench.frameworks.pytorch.normalise import normalised_pixels

INPUT_SIZE = 224


@dataclass(frozen=True)
class Burden:
    """A `DecodedOnDevice` stand-in that hands over `images` after doing `work` with each batch
    on the decoding thread: what the step loses to one part of the decode (decoding alone, its
    copies alone, Python alone)."""

    place: DecodedOnDevice
    images: torch.Tensor
    work: Callable[[EncodedBatch], object]

    @property
    def device(self) -> torch.device:
        return self.place.device

    def __call__(self, batch: EncodedBatch, non_blocking: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        self.work(batch)
        return self.images, batch[3].to(self.device, non_blocking=non_blocking)


@dataclass(frozen=True)
class CropOnly:
    """A `DecodedOnDevice` stand-in that crops images decoded beforehand (`decoded[id(batch)]`)."""

    place: DecodedOnDevice
    decoded: dict[int, list[torch.Tensor]]

    @property
    def device(self) -> torch.device:
        return self.place.device

    def __call__(self, batch: EncodedBatch, non_blocking: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        labels = batch[3].to(self.device, non_blocking=non_blocking)
        return normalised_pixels(cropped(self.decoded[id(batch)], batch[2], INPUT_SIZE), True), labels


def copied_files(batch: EncodedBatch, device: torch.device) -> None:
    """Each file's bytes copied to `device` on its own, then waited for: the decoder's copies."""
    for part in torch.split(batch[0], batch[1].tolist()):
        part.to(device, non_blocking=True)
    torch.cuda.current_stream(device).synchronize()


def python_for(seconds: float) -> None:
    """Pure Python for `seconds`, holding the interpreter's lock as long as Python lets it."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def row(name: str, measured: float | tuple[float, float]) -> None:
    """Prints a measured row (images/s, with the share of time waited where there is one) as it is
    measured: a run cut short keeps what it measured."""
    rate, waited = measured if isinstance(measured, tuple) else (measured, None)
    wait = "" if waited is None else f"  waited {waited:6.1%}"
    print(f"{name:<58} {rate:>8.0f} img/s{wait}", flush=True)


def at(priority: int) -> type[DecodedAhead]:
    """`DecodedAhead` with its side stream at `priority`."""
    return type(f"DecodedAheadAt{priority}", (DecodedAhead,), {"priority": priority})


def encoded_batches(dataset: str, batch: int, count: int) -> list[PackedBatch]:
    """`count` batches of the training split's first images, as the loader's workers hand them over."""
    split = describe_dataset(dataset).train
    items = EncodedTrainItems(split, Augmentation.for_input(INPUT_SIZE), 0)
    keys = [(0, index) for index in range(min(len(split), batch * count))]
    collate = PlannedCollate(INPUT_SIZE)
    return [collate([items[key] for key in keys[i : i + batch]]) for i in range(0, len(keys) - batch + 1, batch)]


def alone(batches: list[EncodedBatch], work: Callable[[EncodedBatch], object], device: torch.device) -> float:
    """Images/s of `work` over the batches, each waited for (one pass to warm up first)."""
    for batch in batches[:2]:
        work(batch)
    torch.cuda.synchronize(device)
    start = time.perf_counter()
    for batch in batches:
        work(batch)
        torch.cuda.synchronize(device)
    return sum(len(b[1]) for b in batches) / (time.perf_counter() - start)


def trained(
    step: Callable[[torch.Tensor], None], feed: Iterator[torch.Tensor], steps: int, warmup: int, batch: int
) -> tuple[float, float]:
    """Images/s of `steps` steps fed by `feed`, after `warmup` steps, and the share of the time
    the training thread waited for `feed`."""
    for _ in range(warmup):
        step(next(feed))
    torch.cuda.synchronize()
    start = time.perf_counter()
    waited = 0.0
    for _ in range(steps):
        asked = time.perf_counter()
        images = next(feed)
        waited += time.perf_counter() - asked
        step(images)
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    return steps * batch / elapsed, waited / elapsed


def profiled(step: Callable[[torch.Tensor], None], feed: Iterator[torch.Tensor], folder: str) -> None:
    """Prints the top operators of 4 fed steps (after 3) by GPU and by CPU time; the trace to `folder`."""
    from torch.profiler import ProfilerActivity, profile

    for _ in range(3):
        step(next(feed))
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(4):
            step(next(feed))
        torch.cuda.synchronize()
    averages = prof.key_averages()
    print(averages.table(sort_by="device_time_total", row_limit=25, max_name_column_width=60))
    print(averages.table(sort_by="self_cpu_time_total", row_limit=20, max_name_column_width=60))
    prof.export_chrome_trace(f"{folder}/decode-overlap-trace.json.gz")


def kernels(work: Callable[[], object]) -> str:
    """What `work` runs on the GPU: its kernels and copies by GPU time, most first, with counts."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        work()
        torch.cuda.synchronize()
    events = sorted(
        ((event.device_time_total, event.count, event.key[:50]) for event in prof.key_averages()), reverse=True
    )
    total = sum(time for time, _, _ in events)
    listed = "; ".join(f"{count}x {name} {time:.0f} us" for time, count, name in events[:8] if time > 0)
    return f"{total:.0f} us: {listed}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--batches", type=int, default=12, help="distinct encoded batches, cycled")
    parser.add_argument("--compile", action="append", default=[], help="a torch.compile mode (repeatable)")
    parser.add_argument("--profile", metavar="DIR", help="profile the last mode's fed steps, the trace into DIR")
    args = parser.parse_args()
    device = torch.device("cuda")
    torch.backends.cudnn.benchmark = True
    print(torch.cuda.get_device_name(device), "torch", torch.__version__, "torchvision", torchvision.__version__)
    print("CUDA_DEVICE_MAX_CONNECTIONS:", os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS", "unset (CUDA's default)"))
    packed_batches = encoded_batches(args.dataset, args.batch, args.batches)
    batches = [batch.parts() for batch in packed_batches]
    memories = {"pageable": batches, "pinned": [batch.pin_memory().parts() for batch in packed_batches]}
    place = DecodedOnDevice(device, INPUT_SIZE, channels_last=True)

    def decode(batch: EncodedBatch) -> list[torch.Tensor]:
        return decoded_images(batch[0], batch[1], device)

    print(f"one batch's decode on the GPU: {kernels(lambda: decode(batches[0]))}")
    images = {id(batch): decode(batch) for batch in batches}
    first = batches[0]
    print(f"one batch's crop on the GPU: {kernels(lambda: cropped(images[id(first)], first[2], INPUT_SIZE))}")
    print(f"{args.dataset}: ResNet-50, {args.batch} a batch, {args.steps} steps after {args.warmup}")
    for memory, source in memories.items():
        row(f"decode alone, {memory}", alone(source, decode, device))
    row("decode + crop alone, pinned", alone(memories["pinned"], place, device))
    row("crop alone", alone(batches, lambda batch: cropped(images[id(batch)], batch[2], INPUT_SIZE), device))
    outranking(device)
    model = torchvision.models.resnet50().to(device, memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    labels = torch.randint(0, 1000, (args.batch,), device=device)
    resident = torch.randn(args.batch, 3, INPUT_SIZE, INPUT_SIZE, device=device).to(memory_format=torch.channels_last)
    for mode in ["eager", *args.compile]:
        forward = model if mode == "eager" else torch.compile(model, mode=mode)

        def step(images: torch.Tensor, forward=forward) -> None:
            with torch.autocast("cuda", torch.bfloat16):
                loss = torch.nn.functional.cross_entropy(forward(images), labels)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

        row(f"{mode}: resident batch", trained(step, itertools.repeat(resident), args.steps, args.warmup, args.batch))
        feeds = {"decoded + cropped, pinned": (place, "pinned", DecodedAhead, None)}
        feeds |= {
            f"decoded only, {memory}": (Burden(place, resident, decode), memory, DecodedAhead, None)
            for memory in memories
        }
        feeds["cropped only"] = (CropOnly(place, images), "pageable", DecodedAhead, None)
        if mode == "eager":
            feeds |= {
                f"each file copied alone, {memory}": (
                    Burden(place, resident, lambda batch: copied_files(batch, device)),
                    memory,
                    DecodedAhead,
                    None,
                )
                for memory in memories
            }
            feeds["5 ms of Python a batch"] = (
                Burden(place, resident, lambda _: python_for(0.005)),
                "pinned",
                DecodedAhead,
                None,
            )
        default = torch.cuda.default_stream(device)
        feeds["decoded + cropped, pinned, step and side at the default"] = (place, "pinned", at(0), default)
        feeds["decoded + cropped, pinned, step at the default, side at -1"] = (place, "pinned", at(-1), default)
        for name, (work, memory, ahead, step_stream) in feeds.items():
            fed = ahead(itertools.cycle(memories[memory]), work)
            pixels = (images for images, _ in fed)
            with torch.cuda.stream(step_stream):
                row(f"{mode}: fed, {name}", trained(step, pixels, args.steps, args.warmup, args.batch))
            fed.ahead.close()
        if args.profile and mode == [*args.compile, "eager"][0]:
            fed = DecodedAhead(itertools.cycle(memories["pinned"]), place)
            profiled(step, (images for images, _ in fed), args.profile)
            fed.ahead.close()


if __name__ == "__main__":
    main()
