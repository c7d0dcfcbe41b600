"""`RunConfig`: everything that defines one run, so it can be sent to a subprocess and stored.

A run is one framework, one strategy, one device count of a `Job` (core/job.py): it holds the
job as this run trains it, with what planning decided for the run (its batch split, the data
format resolved for its framework). The config travels to the child process as JSON and is
copied into the result row as one flat object, the run's fields around the job's, so any row
can be rerun exactly and run folders written before read alike.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from typing import Any

from mgbench.core.errors import UnsafeNameError, UsageError
from mgbench.core.job import Job
from mgbench.core.kinds import DataFormat, DeviceKind
from mgbench.core.models import model_spec
from mgbench.core.schema import check_fields

NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}")
"""A framework or strategy name: one plain file-name part (no separator, no leading dot), since
`run_id` names the run's files and a config read back from a run folder may come from anywhere."""


RUN_FIELDS = ("framework", "strategy", "devices")
"""The run's own fields; every other field of its JSON is the job's."""


@dataclass(frozen=True)
class RunConfig:
    """One run of a job: its framework, strategy and device count, and the job as this run trains
    it (`job`: its `batch_per_device` is this run's share, its `data_format` the one it trains in,
    never None)."""

    framework: str
    strategy: str
    devices: int
    job: Job

    def __post_init__(self) -> None:
        if not isinstance(self.job, Job):
            raise UsageError(f"not a run config: job is {type(self.job).__name__}, not Job")
        check_names(self.framework, self.strategy, self.devices, self.job.device_kind)
        if self.devices < 1:
            raise UsageError(f"device count must be at least 1, got {self.devices}")
        if self.job.data_format is None and self.job.input.has_layout:
            raise UsageError("not a run config: data_format is None, not DataFormat")

    @classmethod
    def of(
        cls,
        job: Job,
        framework: str,
        strategy: str,
        devices: int,
        batch_per_device: int,
        data_format: DataFormat | None,
    ) -> RunConfig:
        """One run of `job`: on `devices` devices of `batch_per_device` samples each (strong
        scaling splits the job's batch), in `data_format` (the job's, or its framework's own)."""
        return cls(
            framework, strategy, devices, job.with_changes(batch_per_device=batch_per_device, data_format=data_format)
        )

    @classmethod
    def flat(
        cls,
        framework: str,
        strategy: str,
        model: str,
        devices: int,
        device_kind: str,
        batch_per_device: int,
        steps: int,
        **job: Any,
    ) -> RunConfig:
        """A run from the flat fields its JSON holds (`to_dict`), checked as a config read back is:
        the names that become file names first (`UnsafeNameError`), then every job field of its
        declared type. A field left out is the job's default; the data format, channels first (none
        for an input without a layout)."""
        check_names(framework, strategy, devices, device_kind)
        fields: dict[str, Any] = {
            "model": model,
            "device_kind": device_kind,
            "batch_per_device": batch_per_device,
            "steps": steps,
        }
        layout = DataFormat.CHANNELS_FIRST if model_spec(model).input.has_layout else None
        fields |= {"data_format": layout, **job}
        check_fields(fields, Job, "not a run config")
        return cls(framework, strategy, devices, Job(**fields))

    @property
    def global_batch(self) -> int:
        return self.job.batch_per_device * self.devices

    @property
    def run_id(self) -> str:
        """A name that is unique within one compare and safe as a file name."""
        return f"{self.framework}-{self.strategy}-{self.devices}{self.job.device_kind}"

    def to_dict(self) -> dict[str, Any]:
        """The flat object a run folder holds, in the order of `COLUMNS`."""
        job = dataclasses.asdict(self.job)
        return {
            "framework": self.framework,
            "strategy": self.strategy,
            "model": job.pop("model"),
            "devices": self.devices,
            **job,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunConfig:
        """A config read back (a run folder, a worker's `--config`): anything that is not one is a
        UsageError, and a name that would become a file name elsewhere an `UnsafeNameError`."""
        if not isinstance(data, dict):
            raise UsageError(f"not a run config: {type(data).__name__} instead of an object")
        try:
            return cls.flat(**{k: v for k, v in data.items() if k in COLUMNS})
        except TypeError as error:
            raise UsageError(f"not a run config: {error}") from None

    @classmethod
    def from_json(cls, text: str) -> RunConfig:
        return cls.from_dict(json.loads(text))

    def with_changes(self, **changes: Any) -> RunConfig:
        """This run with some of its own fields (`RUN_FIELDS`) or its job's changed."""
        own = {name: changes.pop(name) for name in RUN_FIELDS if name in changes}
        return dataclasses.replace(self, job=self.job.with_changes(**changes) if changes else self.job, **own)


COLUMNS = ("framework", "strategy", "model", "devices", *(f.name for f in dataclasses.fields(Job) if f.name != "model"))
"""A config's fields as its flat JSON (`RunConfig.to_dict`) and a result row's first columns hold them."""


def check_names(framework: object, strategy: object, devices: object, device_kind: object) -> None:
    """The fields `run_id` is built from, which become file names in the run folder."""
    for name, value in (("framework", framework), ("strategy", strategy)):
        if not isinstance(value, str) or not NAME_PATTERN.fullmatch(value):
            raise UnsafeNameError(f"{name} {value!r} is not a plain name (letters, digits, '.', '_', '+', '-')")
    if device_kind not in list(DeviceKind):
        raise UnsafeNameError(f"device_kind {device_kind!r} is not one of {', '.join(DeviceKind)}")
    if not isinstance(devices, int) or isinstance(devices, bool):
        raise UnsafeNameError(f"devices {devices!r} is not a whole number")
