"""What `--decode gpu` takes from the training step it shares the GPU with, decoder by decoder:
`python3 benchmarks/decode_overlap.py imagefolder:DIR [--batch 128] [--steps 40] [--compile reduce-overhead]`.

One process, one GPU, no loader workers: the JPEGs' bytes are read beforehand and their windows
drawn from their headers (as `--decode gpu`'s workers hand them over), so what separates the
rows is the GPU and the training process's threads, not the host's reading. Rows, images/s, for
each installed decoder (`jpeg_decoders.py`: nvImageCodec's hardware decoder, torchvision's nvJPEG):

- decode alone and decode + crop alone (`DecodedOnDevice`, what a step would take), each batch
  waited for before the next; crop alone (images decoded beforehand);
- ResNet-50's step (bf16 autocast, channels_last, SGD with momentum) on one resident batch, then
  fed by `DecodedAhead` (decoded and cropped one step ahead on a thread and a side stream of
  high priority), and with the thread only decoding (the step takes the resident batch), eager
  and with each `--compile` mode (torch.compile of the model); cropped only, once. Each fed row
  gives the share of its time the training thread waited for a batch.
- `--profile DIR`: torch.profiler over a few steps of the last mode fed by the first decoder: the
  top operators by GPU and by CPU time, and the trace.

A fed row at its resident row's rate means the decode is hidden behind the step.
"""

from __future__ import annotations

import argparse
import itertools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
import torchvision

from mgbench.datasets.augment import Augmentation
from mgbench.datasets.encoded import EncodedTrainItems
from mgbench.datasets.resolve import describe_dataset
from mgbench.frameworks.pytorch.device_crop import cropped
from mgbench.frameworks.pytorch.device_decode import DecodedAhead, DecodedOnDevice, EncodedBatch, collate_encoded
from mgbench.frameworks.pytorch.jpeg_decoders import JpegDecoder, NvImageCodecDecoder, TorchvisionDecoder
from mgbench.frameworks.pytorch.normalise import normalised_pixels

INPUT_SIZE = 224


@dataclass(frozen=True)
class DecodeOnly:
    """A `DecodedOnDevice` stand-in that decodes each batch and hands over `images` instead."""

    place: DecodedOnDevice
    images: torch.Tensor

    @property
    def device(self) -> torch.device:
        return self.place.device

    def __call__(self, batch: EncodedBatch, non_blocking: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        self.place.decoder(batch[0], batch[1])
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


def encoded_batches(dataset: str, batch: int, count: int) -> list[EncodedBatch]:
    """`count` batches of the training split's first images, as the loader collates them."""
    split = describe_dataset(dataset).train
    items = EncodedTrainItems(split, Augmentation.for_input(INPUT_SIZE), 0)
    keys = [(0, index) for index in range(min(len(split), batch * count))]
    return [
        collate_encoded([items[key] for key in keys[i : i + batch]]) for i in range(0, len(keys) - batch + 1, batch)
    ]


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


class PlanarYuv(NvImageCodecDecoder):
    """nvImageCodec's hardware decode to planar YCbCr, chroma as the file subsamples it: what the
    decode takes when nvJPEG converts no colours (the images are not handed on: decode-only rows)."""

    def __init__(self, device: torch.device):
        super().__init__(device, ("HW_GPU_ONLY",), parts=1)
        self.params = self.codec.DecodeParams(
            apply_exif_orientation=False, color_spec=self.codec.SYCC, sample_format=self.codec.P_YUV
        )
        self.name += ", planar YCbCr"
        self.shown = False

    def as_tensor(self, image: object) -> torch.Tensor:
        if not self.shown:
            print(f"P_YUV image: shape {image.shape}, strides {image.strides}, {image.sample_format}")
            self.shown = True
        return torch.empty(0)


DECODERS: dict[str, Callable[[torch.device], JpegDecoder]] = {
    "nvimgcodec-yuv": PlanarYuv,
    "nvimgcodec": NvImageCodecDecoder,
    "nvimgcodec-1": lambda device: NvImageCodecDecoder(device, parts=1),
    "nvimgcodec-8": lambda device: NvImageCodecDecoder(device, parts=8),
    "nvimgcodec-hw": lambda device: NvImageCodecDecoder(device, ("HW_GPU_ONLY",)),
    "torchvision": TorchvisionDecoder,
}
"""The decoders `--decoders` names: nvImageCodec as `--decode gpu` uses it, with a batch in one
part or in 8 instead of its default, with its hardware decoder only; and torchvision's."""


def pinned(batches: list[EncodedBatch]) -> list[EncodedBatch]:
    """The batches with their files' bytes in pinned memory, as the loader pins them on CUDA."""
    return [(data.pin_memory(), *rest) for data, *rest in batches]


def kernels(decoder: JpegDecoder, batch: EncodedBatch) -> str:
    """What one batch's decode runs on the GPU: its kernels and copies by count, most first."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        decoder(*batch[:2])
        torch.cuda.synchronize()
    counts = sorted(
        ((event.count, event.key[:50]) for event in prof.key_averages() if event.device_time_total > 0), reverse=True
    )
    return "; ".join(f"{count}x {name}" for count, name in counts[:5])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--batches", type=int, default=12, help="distinct encoded batches, cycled")
    parser.add_argument("--compile", action="append", default=[], help="a torch.compile mode (repeatable)")
    parser.add_argument("--profile", metavar="DIR", help="profile the last mode's fed steps, the trace into DIR")
    parser.add_argument("--decoders", default="nvimgcodec,torchvision", help=f"of {', '.join(DECODERS)}")
    args = parser.parse_args()
    device = torch.device("cuda")
    torch.backends.cudnn.benchmark = True
    print(torch.cuda.get_device_name(device), "torch", torch.__version__, "torchvision", torchvision.__version__)
    batches = encoded_batches(args.dataset, args.batch, args.batches)
    memories = {"pageable": batches, "pinned": pinned(batches)}
    names = args.decoders.split(",")
    places = {}
    for name in names:
        try:
            place = DecodedOnDevice(device, INPUT_SIZE, True, DECODERS[name](device))
            print(f"{name}: {place.decoder.name}: {kernels(place.decoder, batches[0])}")
            places[name] = place
        except Exception as error:  # a decoder this machine lacks leaves its rows out, the others run
            print(f"{name}: left out: {error}")
    first = next(iter(places.values()))
    # Copies: a decoder may decode into the images of its earlier batches.
    images = {id(batch): [image.clone() for image in first.decoder(*batch[:2])] for batch in batches}
    rows: dict[str, float | tuple[float, float]] = {}
    for name, place in places.items():
        for memory, source in memories.items():
            rows[f"{name}: decode alone, {memory}"] = alone(
                source, lambda batch, place=place: place.decoder(*batch[:2]), device
            )
        if not isinstance(place.decoder, PlanarYuv):
            rows[f"{name}: decode + crop alone, pinned"] = alone(memories["pinned"], place, device)
    rows["crop alone"] = alone(batches, lambda batch: cropped(images[id(batch)], batch[2], INPUT_SIZE), device)
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

        rows[f"{mode}: resident batch"] = trained(step, itertools.repeat(resident), args.steps, args.warmup, args.batch)
        feeds = {
            f"{name}, decoded + cropped, pinned": (place, "pinned")
            for name, place in places.items()
            if not isinstance(place.decoder, PlanarYuv)
        }
        feeds |= {
            f"{name}, decoded only, {memory}": (DecodeOnly(place, resident), memory)
            for name, place in places.items()
            for memory in memories
        }
        feeds["cropped only"] = (CropOnly(first, images), "pageable")
        for name, (work, memory) in feeds.items():
            fed = DecodedAhead(itertools.cycle(memories[memory]), work)
            pixels = (images for images, _ in fed)
            rows[f"{mode}: fed, {name}"] = trained(step, pixels, args.steps, args.warmup, args.batch)
            fed.ahead.close()
        if args.profile and mode == [*args.compile, "eager"][0]:
            fed = DecodedAhead(itertools.cycle(memories["pinned"]), first)
            profiled(step, (images for images, _ in fed), args.profile)
            fed.ahead.close()
    print(f"{args.dataset}: ResNet-50, {args.batch} a batch, {args.steps} steps after {args.warmup}")
    for name, measured in rows.items():
        rate, waited = measured if isinstance(measured, tuple) else (measured, None)
        wait = "" if waited is None else f"  waited {waited:6.1%}"
        print(f"{name:<52} {rate:>8.0f} img/s{wait}")


if __name__ == "__main__":
    main()
