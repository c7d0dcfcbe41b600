"""PyTorch adapter: DistributedDataParallel, DataParallel, and DataParallel with per-device loss.

- `ddp`: one process per device under torchrun; gradients all-reduced in buckets during backward.
- `dp`: one process drives all devices; nn.DataParallel scatters the batch, replicates the
  model every step, runs replicas in threads and gathers the outputs on device 0, where the
  loss is computed.
- `dp-loss`: as `dp`, but the loss runs inside each replica on its share of the targets, so
  only one scalar per device is gathered instead of the whole output tensor.

Autocast is thread-local; DataParallel runs replicas in worker threads, so the autocast region
lives inside the replicated module's forward (`Autocasting`) rather than around the call.

cuDNN autotuning (`cudnn.benchmark`) is on for one-process-per-device strategies (`ddp`, and
Horovod's `hvd`, which reuses this adapter) and off for the DataParallel strategies:
PyTorch caches the tuned convolution plans per thread, and DataParallel starts new replica
threads every step, so with autotuning every step re-tunes every convolution (BENCHMARKS.md
has the measurement).

`--compile` compiles the module the strategy wrapped (`mgbench.frameworks.torch.compiling`);
nn.DataParallel's strategies are refused it by the registry.

Real datasets (`mgbench.datasets`) are read by a DataLoader over the shared description,
augmentation and epoch sharding, with worker processes, pinned memory and persistent
workers; the model's head follows the dataset's labels.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torchvision
from torch import nn

from mgbench.common.config import MOMENTUM, RunConfig
from mgbench.common.errors import UsageError
from mgbench.common.metrics import mean_auc
from mgbench.common.models import ModelSpec
from mgbench.common.protocol import Adapter, ModelInfo, Placement
from mgbench.common.step_timer import Clock, StepTimer
from mgbench.common.workers import loader_workers
from mgbench.datasets.augment import IMAGENET_MEAN, IMAGENET_STD, Augmentation
from mgbench.datasets.description import DatasetDescription, Split
from mgbench.datasets.resolve import describe_dataset
from mgbench.datasets.sampling import epoch_batches, validation_indices
from mgbench.datasets.synthetic import Shard, held_out_batch, synthetic_pool
from mgbench.frameworks.torch.compiling import begin_step, compiled
from mgbench.frameworks.torch.profiler import profile_with_torch
from mgbench.frameworks.torch.strategies import STRATEGIES, TorchStrategy
from mgbench.frameworks.torch.timing import CudaEventTimer

AUTOCAST_DTYPES = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}


def build_model(spec: ModelSpec) -> nn.Module:
    """The torchvision architecture for a catalogue entry (random weights: nothing is downloaded)."""
    if spec.name == "densenet121":
        return torchvision.models.densenet121(weights=None, num_classes=spec.num_classes)
    if spec.name == "resnet50":
        return torchvision.models.resnet50(weights=None, num_classes=spec.num_classes)
    if spec.name == "inception_v3":
        return torchvision.models.inception_v3(
            weights=None, aux_logits=False, init_weights=True, num_classes=spec.num_classes
        )
    if spec.name == "tiny":
        return nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(32, spec.num_classes),
        )
    raise UsageError(f"the pytorch adapter has no model {spec.name!r}")


def build_criterion(spec: ModelSpec) -> nn.Module:
    return nn.BCEWithLogitsLoss() if spec.loss == "sigmoid" else nn.CrossEntropyLoss()


class Autocasting(nn.Module):
    """Runs the wrapped module under autocast inside its own forward (so in every replica thread)."""

    def __init__(self, module: nn.Module, device_type: str, dtype: torch.dtype | None):
        super().__init__()
        self.module = module
        self.device_type = device_type
        self.dtype = dtype

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        with torch.autocast(self.device_type, dtype=self.dtype, enabled=self.dtype is not None):
            return self.module(images)


@functools.cache
def _imagenet_statistics(device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and standard deviation as (1, 3, 1, 1) tensors, made once per device."""
    return tuple(torch.as_tensor(v, device=device).view(1, 3, 1, 1) for v in (IMAGENET_MEAN, IMAGENET_STD))


def placed_images(
    images: torch.Tensor, device: torch.device, channels_last: bool, non_blocking: bool = False
) -> torch.Tensor:
    """A host batch on `device`, in the model's memory format.

    uint8 batches are the real-data loaders' NHWC pixels (`Augmentation.*_pixels`): they travel
    as bytes, a quarter of float32's, and are normalised here as `augment.normalise` does on the host.
    """
    images = images.to(device, non_blocking=non_blocking)
    if images.dtype == torch.uint8:
        mean, std = _imagenet_statistics(device)
        images = (images.permute(0, 3, 1, 2).float() / 255.0 - mean) / std
    return images.contiguous(memory_format=torch.channels_last if channels_last else torch.contiguous_format)


class DevicePrefetcher:
    """Copies batch k+1 from pinned host memory to the device on a side stream during step k.

    Takes any iterator of host batches (a cycled synthetic pool, or a DataLoader with
    `pin_memory`) and ends when it ends.
    """

    def __init__(
        self, host_batches: Iterator[tuple[torch.Tensor, torch.Tensor]], device: torch.device, channels_last: bool
    ):
        self.host_batches = host_batches
        self.device = device
        self.channels_last = channels_last
        self.stream = torch.cuda.Stream(device)
        self.pending = self._start_copy()

    def _start_copy(self) -> tuple[torch.Tensor, torch.Tensor] | None:
        batch = next(self.host_batches, None)
        if batch is None:
            return None
        images, labels = batch
        with torch.cuda.stream(self.stream):
            images = placed_images(images, self.device, self.channels_last, non_blocking=True)
            return images, labels.to(self.device, non_blocking=True)

    def __iter__(self) -> DevicePrefetcher:
        return self

    def __next__(self) -> tuple[torch.Tensor, torch.Tensor]:
        if self.pending is None:
            raise StopIteration
        torch.cuda.current_stream(self.device).wait_stream(self.stream)
        images, labels = self.pending
        images.record_stream(torch.cuda.current_stream(self.device))
        labels.record_stream(torch.cuda.current_stream(self.device))
        self.pending = self._start_copy()
        return images, labels


class TrainImages(torch.utils.data.Dataset):
    """Training split keyed by (epoch, index): the augmentation's random draws depend on both.
    Items are uint8 pixels, normalised once on the device (`placed_images`)."""

    def __init__(self, split: Split, augmentation: Augmentation, seed: int):
        self.split = split
        self.augmentation = augmentation
        self.seed = seed

    def __len__(self) -> int:
        return len(self.split)

    def __getitem__(self, key: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
        epoch, index = key
        image = self.augmentation.train_pixels(self.split.files[index], self.seed, epoch, index)
        return image, self.split.targets[index]


class EvalImages(torch.utils.data.Dataset):
    """This process's share of the validation split, centre-cropped."""

    def __init__(self, split: Split, augmentation: Augmentation, indices: list[int]):
        self.split = split
        self.augmentation = augmentation
        self.indices = indices

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, position: int) -> tuple[np.ndarray, np.ndarray]:
        index = self.indices[position]
        return self.augmentation.eval_pixels(self.split.files[index]), self.split.targets[index]


class EpochBatchSampler(torch.utils.data.Sampler):
    """Yields this shard of each global batch as (epoch, index) keys: of `epoch` (set before each
    epoch), or with `endless` of that epoch and every later one in one stream.

    Endless is for runs timed by steps: a new DataLoader iterator per epoch drains the workers'
    queue at every epoch's end, and each restart stalled DenseNet-121 on 4 GPUs for 1.0-1.4 s
    every 31 steps (20,000 PNGs, 512 per global batch).
    """

    def __init__(self, size: int, global_batch: int, shard: Shard, seed: int):
        self.size, self.global_batch, self.shard, self.seed = size, global_batch, shard, seed
        self.epoch = 0
        self.endless = False

    def __len__(self) -> int:
        return self.size // self.global_batch

    def __iter__(self) -> Iterator[list[tuple[int, int]]]:
        for epoch in itertools.count(self.epoch) if self.endless else (self.epoch,):
            for batch in epoch_batches(self.size, self.global_batch, self.shard, epoch, self.seed):
                yield [(epoch, index) for index in batch]


class TorchProcess(Adapter):
    """What every adapter running torch modules on one strategy object shares (this one's, and
    Keras over PyTorch's): joining the strategy's process group and naming the devices, this
    rank's shard of each global batch, placing host batches, synchronisation, peak device memory,
    versions, leaving the group, and the profiled window under torch.profiler. Subclasses set
    `parallel`, `devices`, `device` and `channels_last`."""

    parallel: TorchStrategy
    channels_last = False

    def step_loss(self, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """The forward and the loss of one step, as the adapter's model computes them."""
        raise NotImplementedError

    def train_step(self, batch: tuple[torch.Tensor, torch.Tensor]) -> None:
        """Forward and loss (`step_loss`), backward (the strategy exchanges gradients as they come
        or in `apply_gradients`), then the update, unscaled first under fp16."""
        images, labels = batch
        begin_step(self.config.compile)
        self.optimizer.zero_grad()  # set_to_none, the default (Horovod's wrapper takes no argument)
        loss = self.step_loss(images, labels)
        self.scaler.scale(loss).backward()
        self.parallel.apply_gradients(self.optimizer, self.scaler)
        self._loss = loss.detach()

    def last_loss(self) -> float:
        return self.parallel.global_mean(self._loss)

    def pending_loss(self) -> torch.Tensor:
        """The last step's loss, unread, in a tensor of its own (a CUDA graph's replay overwrites
        its outputs: `reduce-overhead` would hand back the next step's loss)."""
        return self._loss.clone()

    def read_losses(self, pending: list[torch.Tensor]) -> list[float]:
        """Every step's loss, averaged over the processes in one exchange and read in one copy."""
        return self.parallel.average(torch.stack(pending).float()).tolist()

    def step_timer(self, clock: Clock) -> StepTimer:
        """CUDA events on GPU (no synchronisation inside the window), else per-step sync."""
        return CudaEventTimer(self.device, clock) if self.use_cuda else super().step_timer(clock)

    def _start(self, config: RunConfig) -> None:
        """What `setup` starts with: the job kept, the process group joined, this rank's devices."""
        self.accept(config)
        if self.use_cuda and not torch.cuda.is_available():
            raise UsageError("CUDA devices were asked for but torch sees none")
        torch.backends.cudnn.benchmark = not self.parallel.replica_threads
        self.devices = self._join_devices(config)
        self.device = self.devices[0]

    def _join_devices(self, config: RunConfig) -> list[torch.device]:
        """Join the strategy's process group; name the devices this process drives."""
        joined = self.parallel.join(config, self.use_cuda)
        if self.use_cuda:
            torch.cuda.set_device(joined.devices[0])
            names = [torch.cuda.get_device_name(d) for d in joined.devices]
        else:
            names = [f"cpu ({torch.get_num_threads()} threads)"]
        self._placement = Placement(rank=joined.rank, world_size=joined.world, device_names=names)
        return joined.devices

    def _shard(self) -> Shard:
        return Shard.of_rank(self._placement.rank, self._placement.world_size, self.config.global_batch)

    def _to_tensors(self, batch: tuple[np.ndarray, np.ndarray]) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.from_numpy(batch[0]), torch.from_numpy(batch[1])

    def _to_device(self, batch: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        return placed_images(batch[0], self.device, self.channels_last), batch[1].to(self.device)

    def synchronize(self) -> None:
        if self.use_cuda:
            for device in self.devices:
                torch.cuda.synchronize(device)

    def peak_device_memory_bytes(self) -> int | None:
        return max(torch.cuda.max_memory_allocated(d) for d in self.devices)

    def close(self) -> None:
        self.parallel.close()

    def profile(self, run_steps: Callable[..., None], trace_path: Path) -> None:
        profile_with_torch(run_steps, trace_path, self.use_cuda)

    def framework_versions(self) -> dict[str, str]:
        versions = {"torch": torch.__version__}
        if self.use_cuda:
            versions["cuda"] = str(torch.version.cuda)
            versions["cudnn"] = str(torch.backends.cudnn.version())
            versions["nccl"] = ".".join(map(str, torch.cuda.nccl.version()))
        return versions


class TorchTrainer(TorchProcess):
    """Everything the PyTorch strategies share; `self.parallel` (a `TorchStrategy`) does what differs."""

    def __init__(self, strategy: str, parallel: TorchStrategy):
        super().__init__(strategy)
        self.parallel = parallel

    def setup(self, config: RunConfig) -> ModelInfo:
        self._start(config)
        torch.manual_seed(config.seed)

        self.dataset = describe_dataset(config.dataset)
        spec = self.dataset.task_spec(config.spec) if self.dataset else config.spec
        core = build_model(spec)
        self.channels_last = config.data_format == "channels_last"
        memory_format = torch.channels_last if self.channels_last else torch.contiguous_format
        core = core.to(self.device, memory_format=memory_format)
        self.core = core
        self.criterion = build_criterion(spec).to(self.device)
        autocast_dtype = AUTOCAST_DTYPES[config.precision]
        casting = Autocasting(core, self.device.type, autocast_dtype)
        self.model = compiled(self.parallel.wrap(casting, self.criterion, self.devices), config.compile)
        self.optimizer = self.parallel.distribute_optimizer(
            torch.optim.SGD(core.parameters(), lr=config.learning_rate, momentum=MOMENTUM), core
        )
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=config.precision == "fp16")
        self._loss = torch.zeros((), device=self.device)
        if self.dataset is not None:
            self._build_loaders(self.dataset)
        return ModelInfo(parameters=sum(p.numel() for p in core.parameters() if p.requires_grad))

    def _build_loaders(self, dataset: DatasetDescription) -> None:
        """Persistent worker pools for training and validation, decoding with PIL in the workers."""
        workers = loader_workers(self.config.workers, self._placement.world_size)
        augmentation = Augmentation.for_input(self.config.input_size)
        options = dict(
            num_workers=workers,
            pin_memory=self.use_cuda and not self.config.data_on_device,
            persistent_workers=workers > 0,
        )
        self.sampler = EpochBatchSampler(len(dataset.train), self.config.global_batch, self._shard(), self.config.seed)
        self.train_loader = torch.utils.data.DataLoader(
            TrainImages(dataset.train, augmentation, self.config.seed), batch_sampler=self.sampler, **options
        )
        indices = validation_indices(len(dataset.val), self._placement.rank, self._placement.world_size)
        self.val_loader = torch.utils.data.DataLoader(
            EvalImages(dataset.val, augmentation, indices), batch_size=self.config.batch_per_device, **options
        )

    def _feed(self, host_batches: Iterator[tuple[torch.Tensor, torch.Tensor]]) -> Iterator[Any]:
        """Host batches to the device: prefetched on a side stream on GPU, copied in line otherwise."""
        if self.use_cuda and not self.config.data_on_device:
            return DevicePrefetcher(host_batches, self.device, self.channels_last)
        return (self._to_device(batch) for batch in host_batches)

    def batches(self) -> Iterator[Any]:
        if self.dataset is not None:
            self.sampler.epoch, self.sampler.endless = 0, True
            return self._feed(iter(self.train_loader))
        pool = synthetic_pool(self.config.spec, self.config.input_size, self._shard(), self.config.seed)
        host = [self._to_tensors(batch) for batch in pool]
        if self.config.data_on_device or not self.use_cuda:
            return itertools.cycle([self._to_device(batch) for batch in host])  # resident: copied once
        return self._feed(itertools.cycle([(x.pin_memory(), y.pin_memory()) for x, y in host]))

    def steps_per_epoch(self) -> int:
        return len(self.sampler)

    def epoch_batches(self, epoch: int) -> Iterator[Any]:
        self.sampler.epoch, self.sampler.endless = epoch, False
        return self._feed(iter(self.train_loader))

    def set_learning_rate(self, learning_rate: float) -> None:
        for group in self.optimizer.param_groups:
            group["lr"] = learning_rate

    def step_loss(self, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self.parallel.loss(self.model, self.criterion, images, labels)

    def evaluate(self) -> dict[str, float]:
        casting = Autocasting(self.core, self.device.type, AUTOCAST_DTYPES[self.config.precision])
        self.core.eval()
        with torch.no_grad():
            metrics = self._validate(casting) if self.dataset is not None else self._held_out_loss(casting)
        self.core.train()
        return metrics

    def _held_out_loss(self, casting: nn.Module) -> dict[str, float]:
        batch = held_out_batch(self.config.spec, self.config.input_size, self._shard(), self.config.seed + 1)
        images, labels = self._to_device(self._to_tensors(batch))
        return {"loss": self.parallel.global_mean(self.criterion(casting(images).float(), labels))}

    def _validate(self, casting: nn.Module) -> dict[str, float]:
        """Loss and mean AUC over the whole validation split: each rank scores its shard, all gather."""
        scores, targets, loss_sum = [], [], 0.0
        for images, labels in self._feed(iter(self.val_loader)):
            logits = casting(images).float()
            loss_sum += float(self.criterion(logits, labels)) * len(labels)
            probabilities = torch.sigmoid(logits) if self.dataset.multi_label else torch.softmax(logits, dim=1)
            scores.append(probabilities.cpu().numpy())
            targets.append(labels.cpu().numpy())
        shards = self.parallel.gather((loss_sum, np.concatenate(scores), np.concatenate(targets)))
        all_scores = np.concatenate([shard[1] for shard in shards])
        all_targets = np.concatenate([shard[2] for shard in shards])
        return {"loss": sum(shard[0] for shard in shards) / len(all_targets), "auc": mean_auc(all_targets, all_scores)}

    def framework_versions(self) -> dict[str, str]:
        return {**super().framework_versions(), "torchvision": torchvision.__version__}

    def save_state(self, path: Path) -> None:
        arrays = {name: p.detach().float().cpu().numpy() for name, p in self.core.named_parameters()}
        np.savez(path, **arrays)


def create_trainer(strategy: str) -> TorchTrainer:
    return TorchTrainer(strategy, STRATEGIES[strategy]())
