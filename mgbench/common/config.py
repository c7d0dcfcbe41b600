"""`RunConfig`: everything that defines one run, so it can be sent to a subprocess and stored.

A run is one framework, one strategy, one device count. The config travels to the child
process as JSON and is copied into the result row, so any row can be rerun exactly.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from dataclasses import dataclass
from typing import Any, Literal

from mgbench.common.errors import UnsafeNameError, UsageError
from mgbench.common.models import ModelSpec, model_spec
from mgbench.common.schema import check_fields

Precision = Literal["fp32", "bf16", "fp16"]
DataFormat = Literal["channels_first", "channels_last"]
DeviceKind = Literal["cuda", "cpu"]
DEVICE_KINDS: tuple[str, ...] = ("cuda", "cpu")
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}")
"""A framework or strategy name: one plain file-name part (no separator, no leading dot), since
`run_id` names the run's files and a config read back from a run folder may come from anywhere."""

PRECISIONS: tuple[str, ...] = ("fp32", "bf16", "fp16")
DEFAULT_COMPILE_MODE = "default"
"""What a bare `--compile` asks for: each compiler's own default."""
DATA_FORMATS: tuple[str, ...] = ("channels_first", "channels_last")

SEED_LIMIT = 2**32
"""Seeds are below this: numpy's `default_rng`/`seed` and TensorFlow take 32-bit seeds, so a
larger or negative one would fail every run after launching instead of once before."""

MOMENTUM = 0.9
"""The job every adapter trains: SGD with this momentum, no weight decay, `learning_rate` from the config."""


@dataclass(frozen=True)
class RunConfig:
    framework: str
    strategy: str
    model: str
    devices: int
    device_kind: DeviceKind
    batch_per_device: int
    steps: int
    precision: Precision = "fp32"
    data_format: DataFormat = "channels_first"
    dataset: str = "synthetic"
    data_on_device: bool = False
    image_size: int | None = None
    learning_rate: float = 0.01
    seed: int = 0
    epochs: int | None = None
    """Train whole epochs of a real dataset (validating after each) instead of `steps` steps."""
    workers: int | None = None
    """Data-loader worker processes per training process; None sizes them from the CPU count."""
    lr_reference_batch: int = 256
    """With `epochs`, `learning_rate` is the rate for this global batch (linear scaling rule)."""
    profile_steps: int = 0
    """Extra steady-state steps traced by the framework's profiler after the timed ones (0: none)."""
    compile: str | None = None
    """Compile the training step in this mode (`default`, or a compiler's own such as torch's
    `reduce-overhead`); None runs it as the framework does without a compiler asked for."""
    skip_bad_images: bool = False
    """Leave out the dataset's images that cannot be decoded instead of refusing the dataset."""
    skipped_images: tuple[str, ...] = ()
    """The images left out (`skip_bad_images`): the files the dataset check before launching
    could not decode. Every reader of the dataset leaves them out."""
    bit_depth: int | None = None
    """The range of the dataset's images wider than 8 bits (16-bit PNGs, where 12-bit detectors
    store 0-4095), read once by the dataset check: each such image is scaled by 2**bit_depth - 1,
    so a raw value means the same in every image. None: no such images, or no check (they are
    then scaled by the 16 bits a PNG declares)."""

    def __post_init__(self) -> None:
        self._check_names()
        # A config read back may hold any JSON: every field its declared type before any check
        # below compares or strips it.
        check_fields(self.__dict__, RunConfig, "not a run config")
        # JSON gives lists back: one type, so configs compare equal however they travelled.
        object.__setattr__(self, "skipped_images", tuple(self.skipped_images))
        model_spec(self.model)
        if self.devices < 1:
            raise UsageError(f"device count must be at least 1, got {self.devices}")
        if self.batch_per_device < 1:
            raise UsageError(f"batch per device must be at least 1, got {self.batch_per_device}")
        if self.steps < 1:
            raise UsageError(f"steps must be at least 1, got {self.steps}")
        if self.precision not in PRECISIONS:
            raise UsageError(f"unknown precision {self.precision!r}; choose from {', '.join(PRECISIONS)}")
        if self.data_format not in DATA_FORMATS:
            raise UsageError(f"unknown data format {self.data_format!r}; choose from {', '.join(DATA_FORMATS)}")
        if self.epochs is not None and self.epochs < 1:
            raise UsageError(f"epochs must be at least 1, got {self.epochs}")
        if self.epochs is not None and self.dataset == "synthetic":
            raise UsageError(
                "--epochs needs a real dataset (--dataset chestxray:PATH, labels:PATH or imagefolder:PATH)"
            )
        if self.data_on_device and self.dataset != "synthetic":
            raise UsageError(
                "--data-on-device keeps synthetic batches on the devices; a real dataset is decoded "
                "and augmented by the loader every step (compare a staged and an -unstaged strategy instead)"
            )
        if self.workers is not None and self.workers < 0:
            raise UsageError(f"workers must be 0 or more, got {self.workers}")
        if not 0 <= self.seed < SEED_LIMIT:
            raise UsageError(f"the seed must be 0 to 2**32 - 1 (32 bits), got {self.seed}")
        if not math.isfinite(self.learning_rate) or self.learning_rate < 0:
            raise UsageError(f"the learning rate must be a finite number >= 0, got {self.learning_rate}")
        if self.lr_reference_batch < 1:
            raise UsageError(f"the learning-rate reference batch must be at least 1, got {self.lr_reference_batch}")
        if self.profile_steps < 0:
            raise UsageError(f"--profile takes a number of steps >= 0 (0: none), got {self.profile_steps}")
        if self.compile is not None and not self.compile.strip():
            raise UsageError("--compile takes a mode name, got an empty one")
        if self.image_size is not None and self.image_size < 16:
            raise UsageError(f"image size must be at least 16 px, got {self.image_size}")
        if self.bit_depth is not None and not 1 <= self.bit_depth <= 32:
            raise UsageError(f"a bit depth is 1 to 32 bits, got {self.bit_depth}")

    def _check_names(self) -> None:
        """The fields `run_id` is built from, which become file names in the run folder."""
        for name in ("framework", "strategy"):
            value = getattr(self, name)
            if not isinstance(value, str) or not NAME_PATTERN.fullmatch(value):
                raise UnsafeNameError(f"{name} {value!r} is not a plain name (letters, digits, '.', '_', '+', '-')")
        if self.device_kind not in DEVICE_KINDS:
            raise UnsafeNameError(f"device_kind {self.device_kind!r} is not one of {', '.join(DEVICE_KINDS)}")
        if not isinstance(self.devices, int) or isinstance(self.devices, bool):
            raise UnsafeNameError(f"devices {self.devices!r} is not a whole number")

    @property
    def spec(self) -> ModelSpec:
        return model_spec(self.model)

    @property
    def global_batch(self) -> int:
        return self.batch_per_device * self.devices

    @property
    def input_size(self) -> int:
        """Image side in pixels: the model's own unless overridden (small CPU demos)."""
        return self.image_size or self.spec.image_size

    @property
    def run_id(self) -> str:
        """A name that is unique within one compare and safe as a file name."""
        return f"{self.framework}-{self.strategy}-{self.devices}{self.device_kind}"

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunConfig:
        """A config read back (a run folder, a worker's `--config`): anything that is not one is a
        UsageError, and a name that would become a file name elsewhere an `UnsafeNameError`."""
        if not isinstance(data, dict):
            raise UsageError(f"not a run config: {type(data).__name__} instead of an object")
        names = {f.name for f in dataclasses.fields(cls)}
        try:
            return cls(**{k: v for k, v in data.items() if k in names})
        except TypeError as error:
            raise UsageError(f"not a run config: {error}") from None

    @classmethod
    def from_json(cls, text: str) -> RunConfig:
        return cls.from_dict(json.loads(text))

    def with_changes(self, **changes: Any) -> RunConfig:
        return dataclasses.replace(self, **changes)
