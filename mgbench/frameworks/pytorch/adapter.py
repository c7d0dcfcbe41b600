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

`--compile` compiles the module the strategy wrapped, the model with its loss where the strategy
runs the loss in it (`StepLoss`; `mgbench.frameworks.pytorch.compiling`);
nn.DataParallel's strategies are refused it by the registry.

Real datasets (`mgbench.datasets`) are read by torch's DataLoader over the shared description,
augmentation and epoch sharding (`mgbench.frameworks.pytorch.data`); the model's head follows
the dataset's labels; with `--decode gpu` the workers read JPEG bytes and the device decodes
and crops them (`device_decode.py`). Input is staged (copied on a side stream one step ahead) by every
strategy but `ddp-unstaged`, which copies in line: the staged vs unstaged experiment.

A language model (GPT-2, `gpt2.py`) trains through the same strategies on token batches
(`data.TokenFeed`: synthetic tokens, or `--dataset tokens:PATH`'s windows), staged alike; its
validation gives the loss per token and its perplexity.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torchvision
from torch import nn

from mgbench.core.config import RunConfig
from mgbench.core.errors import UsageError
from mgbench.datasets.resolve import task_for
from mgbench.datasets.synthetic import Shard
from mgbench.frameworks.memory import cap_bytes, share_of
from mgbench.frameworks.pytorch import attention, models, weights
from mgbench.frameworks.pytorch.compiling import begin_step, compiled
from mgbench.frameworks.pytorch.data import PlacedPixels, PlacedTokens, feed_for, placed_images
from mgbench.frameworks.pytorch.device_decode import DecodedOnDevice, outranking
from mgbench.frameworks.pytorch.profiler import profile_with_torch
from mgbench.frameworks.pytorch.spec import FRAMEWORK
from mgbench.frameworks.pytorch.strategies import STRATEGIES, TorchStrategy
from mgbench.frameworks.pytorch.timing import CudaEventTimer
from mgbench.measure.metrics import gathered_metrics, language_model_metrics
from mgbench.measure.step_timer import Clock, StepTimer
from mgbench.training.protocol import Adapter, ModelInfo, Placement

AUTOCAST_DTYPES = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}
Placing = PlacedPixels | PlacedTokens | DecodedOnDevice
"""What puts a host batch on the device: pixels or tokens copied, or file bytes decoded there."""


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


def cap_memory(config: RunConfig, devices: list[torch.device]) -> None:
    """`--gpu-memory-gb`: torch's caching allocator held to that share of each device's memory
    (an allocation past it raises torch's out-of-memory error, as on a GPU that small)."""
    limit = cap_bytes(config)
    for device in devices if limit is not None else []:
        share = share_of(limit, torch.cuda.get_device_properties(device).total_memory)
        if share is not None:
            torch.cuda.set_per_process_memory_fraction(share, device)


class TorchProcessAdapter(Adapter):
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
        begin_step(self.config.job.compile)
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
        if self.use_cuda and config.job.decode.on_device:
            # Before the model and its wrappers are built: autograd's nodes keep the stream they
            # were made on, and a step on another waits for it at every gradient.
            outranking(self.device)

    def _join_devices(self, config: RunConfig) -> list[torch.device]:
        """Join the strategy's process group; name the devices this process drives."""
        joined = self.parallel.join(config, self.use_cuda)
        if self.use_cuda:
            torch.cuda.set_device(joined.devices[0])
            names = [torch.cuda.get_device_name(d) for d in joined.devices]
            cap_memory(config, joined.devices)
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

    def set_learning_rate(self, learning_rate: float) -> None:
        """Every parameter group of the optimizer, which both torch-module adapters build."""
        for group in self.optimizer.param_groups:
            group["lr"] = learning_rate

    def synchronize(self) -> None:
        if self.use_cuda:
            for device in self.devices:
                torch.cuda.synchronize(device)

    def peak_device_memory_bytes(self) -> int | None:
        return max(torch.cuda.max_memory_allocated(d) for d in self.devices)

    def peak_device_reserved_bytes(self) -> int | None:
        """The caching allocator's high-water mark: allocated blocks and the cached ones it kept."""
        return max(torch.cuda.max_memory_reserved(d) for d in self.devices)

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


class TorchAdapter(TorchProcessAdapter):
    """Everything the PyTorch strategies share; `self.parallel` (a `TorchStrategy`) does what differs.
    `staged`: on GPU, batch k+1 is copied to the device on a side stream during step k; False
    (an unstaged twin, `StrategySpec.staged`): each batch is copied in line by a plain
    `.to(device)` when the step takes it."""

    def __init__(self, strategy: str, parallel: TorchStrategy, staged: bool = True):
        super().__init__(strategy)
        self.parallel, self.staged = parallel, staged

    def setup(self, config: RunConfig) -> ModelInfo:
        self._start(config)
        torch.manual_seed(config.job.seed)

        self.dataset, spec = task_for(config.job)
        core = models.build_model(spec, config.job.input_size, config.job.data_format)
        weights.set_batch_norm(core, spec.hyperparameters)
        digest = config.job.start_from(spec, partial(weights.load_initial, core))
        core = core.to(self.device)
        self.channels_last = config.job.data_format is not None and config.job.data_format.channels_last
        self.feed = feed_for(spec, self.device, self.channels_last)
        self.language_model = spec.language_model is not None
        self.core = core
        self.criterion = models.build_loss(spec).to(self.device)
        autocast_dtype = AUTOCAST_DTYPES[config.job.precision]
        casting = Autocasting(core, self.device.type, autocast_dtype)
        stepped = self.parallel.loss_module(casting, self.criterion)
        self.model = compiled(self.parallel.wrap(stepped, self.criterion, self.devices), config.job.compile)
        self.optimizer = self.parallel.distribute_optimizer(
            models.build_optimizer(
                core.parameters(), config.job.learning_rate, spec.optimization.optimizer, config.job.fused_optimizer
            ),
            core,
        )
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=config.job.precision == "fp16")
        self._loss = torch.zeros((), device=self.device)
        if self.dataset is not None:
            self.loaders = self.feed.loaders(self.dataset, config, self._placement, self._shard())
        return ModelInfo(
            parameters=sum(p.numel() for p in core.parameters() if p.requires_grad),
            init_digest=digest,
            attention_kernel=attention.attention_kernel(
                spec, config.job.input_size, config.job.batch_per_device, self.device, autocast_dtype or torch.float32
            ),
            decoder=self.loaders.decoder if self.dataset is not None else None,
        )

    def _feed(self, host_batches: Iterator[Any], place: Placing) -> Iterator[Any]:
        """Host batches placed on the device by `place`: staged (on a side stream ahead of the step,
        as `place` stages) on GPU where the strategy stages, else when the step takes each."""
        if self.use_cuda and self.staged:
            return place.staged(host_batches)
        return (place(batch) for batch in host_batches)

    def _loaded(self, batches: Iterable[Any]) -> Iterator[Any]:
        """A loader's batches on the device, placed as its loaders say (pixels or tokens copied,
        or file bytes decoded there)."""
        return self._feed(iter(batches), self.loaders.place)

    def batches(self) -> Iterator[Any]:
        if self.dataset is not None:
            return self._loaded(self.loaders.train.endless())
        host = [self._to_tensors(batch) for batch in self.feed.pool(self.config.job, self._shard())]
        if self.config.job.data_on_device or not self.use_cuda:
            return itertools.cycle([self.feed.place(batch) for batch in host])  # resident: copied once
        pinned = itertools.cycle([(x.pin_memory(), y.pin_memory()) for x, y in host])
        return self._feed(pinned, self.feed.place)

    def steps_per_epoch(self) -> int:
        return len(self.loaders.train)

    def epoch_batches(self, epoch: int) -> Iterator[Any]:
        return self._loaded(self.loaders.train.epoch(epoch))

    def step_loss(self, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self.parallel.loss(self.model, self.criterion, images, labels)

    def evaluate(self, split: str = "val") -> dict[str, float]:
        """Image models as `Adapter.evaluate` says. A language model gives `loss` (per token) and
        `perplexity` (`metrics.language_model_metrics`) on a held-out batch of synthetic tokens, or
        on a corpus over the fixed windows of its `val` split (`TokenLoaders`), which `test` reads
        too: a token stream has no test split."""
        casting = Autocasting(self.core, self.device.type, AUTOCAST_DTYPES[self.config.job.precision])
        self.core.eval()
        with torch.no_grad():
            if self.language_model:
                metrics = self._language_model_metrics(casting, split)
            elif self.dataset is not None:
                metrics = self._score(casting, split)
            else:
                metrics = self._held_out_loss(casting)
        self.core.train()
        return metrics

    def _held_out_batches(self, split: str) -> Iterator[Any]:
        """The batches of `split` on the device: the loader's share of it on real data, else the
        held-out synthetic batch."""
        if self.dataset is not None:
            return self._loaded(self.loaders.held_out[split])
        return iter([self.feed.place(self._to_tensors(self.feed.held_out(self.config.job, self._shard())))])

    def _held_out_loss(self, casting: nn.Module) -> dict[str, float]:
        (images, labels) = next(self._held_out_batches("val"))
        return {"loss": self.parallel.global_mean(self.criterion(casting(images).float(), labels))}

    def _language_model_metrics(self, casting: nn.Module, split: str) -> dict[str, float]:
        """The mean loss per token over this process's held-out batches (each as many tokens),
        averaged over the processes (whose shards are as large), and its perplexity."""
        losses = [self.criterion(casting(inputs), targets) for inputs, targets in self._held_out_batches(split)]
        return language_model_metrics(self.parallel.global_mean(torch.stack(losses).mean()))

    def _score(self, casting: nn.Module, split: str) -> dict[str, float]:
        """Loss and `split_metrics` over the whole held-out `split`: each rank scores its shard, all gather."""
        scores, targets, loss_sum = [], [], 0.0
        for images, labels in self._held_out_batches(split):
            logits = casting(images).float()
            loss_sum += float(self.criterion(logits, labels)) * len(labels)
            probabilities = torch.sigmoid(logits) if self.dataset.multi_label else torch.softmax(logits, dim=1)
            scores.append(probabilities.cpu().numpy())
            targets.append(labels.cpu().numpy())
        shards = self.parallel.gather((loss_sum, np.concatenate(scores), np.concatenate(targets)))
        return gathered_metrics(shards, self.dataset.multi_label)

    def framework_versions(self) -> dict[str, str]:
        return {**super().framework_versions(), "torchvision": torchvision.__version__}

    def save_state(self, path: Path) -> None:
        arrays = {name: p.float().numpy() for name, p in self.parallel.full_state(self.core).items()}
        np.savez(path, **arrays)

    def share_state(self) -> None:
        """The primary's `save_state` gathers the shards of a sharding strategy: joined here."""
        self.parallel.full_state(self.core)

    def close(self) -> None:
        """Ends the loaders' worker processes, then leaves the process group. torch ends a worker
        pool when the last reference to its iterator goes (the driver has closed the feed that
        read it): dropped here, in the run. Left to the interpreter's exit, torch's exit hook
        for a persistent pinned loader waits for each worker in turn before killing it."""
        self.loaders = None
        super().close()


def create_adapter(strategy: str) -> TorchAdapter:
    spec = FRAMEWORK.strategy(strategy)
    return TorchAdapter(strategy, STRATEGIES[spec.kind](), spec.staged)
