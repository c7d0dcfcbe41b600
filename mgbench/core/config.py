"""`RunConfig`: everything that defines one run, so it can be sent to a subprocess and stored.

A run is one framework, one strategy, one device count of a `Job` (core/job.py): the job's
fields as the user asked them, with what planning decided for this run (its batch split, the
data format resolved for its framework). The config travels to the child process as JSON and is
copied into the result row as one flat object, so any row can be rerun exactly.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from typing import Any

from mgbench.core.errors import UnsafeNameError, UsageError
from mgbench.core.initial_weights import INIT_FRAMEWORK
from mgbench.core.job import Job, Precision, settle
from mgbench.core.kinds import DataFormat, Decode, DeviceKind
from mgbench.core.models import ModelSpec, model_spec
from mgbench.core.schema import check_fields

NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}")
"""A framework or strategy name: one plain file-name part (no separator, no leading dot), since
`run_id` names the run's files and a config read back from a run folder may come from anywhere."""


@dataclass(frozen=True)
class RunConfig:
    """The fields after `devices` are the `Job`'s (documented there), flat so that the JSON of
    a run stays one object; `batch_per_device` is this run's share and `data_format` the one
    it trains in (never None)."""

    framework: str
    strategy: str
    model: str
    devices: int
    device_kind: DeviceKind
    batch_per_device: int
    steps: int
    precision: Precision = "fp32"
    data_format: DataFormat = DataFormat.CHANNELS_FIRST
    dataset: str = "synthetic"
    data_on_device: bool = False
    fused_optimizer: bool = False
    image_size: int | None = None
    learning_rate: float = 0.01
    seed: int = 0
    epochs: int | None = None
    workers: int | None = None
    lr_reference_batch: int = 256
    profile_steps: int = 0
    compile: str | None = None
    skip_bad_images: bool = False
    skipped_images: tuple[str, ...] = ()
    bit_depth: int | None = None
    init: str = INIT_FRAMEWORK
    target_metric: str | None = None
    decode: Decode = Decode.CPU
    decode_host_share: float = 0.0

    def __post_init__(self) -> None:
        self._check_names()
        # A config read back may hold any JSON: every field its declared type before any check
        # below compares or strips it.
        check_fields(self.__dict__, RunConfig, "not a run config")
        if self.devices < 1:
            raise UsageError(f"device count must be at least 1, got {self.devices}")
        settle(self)

    def _check_names(self) -> None:
        """The fields `run_id` is built from, which become file names in the run folder."""
        for name in ("framework", "strategy"):
            value = getattr(self, name)
            if not isinstance(value, str) or not NAME_PATTERN.fullmatch(value):
                raise UnsafeNameError(f"{name} {value!r} is not a plain name (letters, digits, '.', '_', '+', '-')")
        if self.device_kind not in list(DeviceKind):
            raise UnsafeNameError(f"device_kind {self.device_kind!r} is not one of {', '.join(DeviceKind)}")
        if not isinstance(self.devices, int) or isinstance(self.devices, bool):
            raise UnsafeNameError(f"devices {self.devices!r} is not a whole number")

    @classmethod
    def of(
        cls, job: Job, framework: str, strategy: str, devices: int, batch_per_device: int, data_format: DataFormat
    ) -> RunConfig:
        """One run of `job`: on `devices` devices of `batch_per_device` samples each (strong
        scaling splits the job's batch), in `data_format` (the job's, or its framework's own)."""
        fields = {**dataclasses.asdict(job), "batch_per_device": batch_per_device, "data_format": data_format}
        return cls(framework=framework, strategy=strategy, devices=devices, **fields)

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
