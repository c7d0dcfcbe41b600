"""`compare.json`: a compare's command, options and every planned config, read back checked.

`compare --resume` runs the recorded plan and `mgbench report` shows its runs that have no row,
so both read this file from folders that may come from anywhere. `ComparePlan.read` is the one
reader: a file that is not a plan (cut short, `{}`, a list, a config naming a path) is one
UsageError naming it, never a traceback and never a name that leads outside the folder.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mgbench.core.config import RunConfig
from mgbench.core.errors import UsageError
from mgbench.core.schema import read_json_file

SCALINGS = ("weak", "strong")


@dataclass
class ComparePlan:
    command: str | None
    configs: list[RunConfig]
    timeout: float | None = None
    """Seconds per run; None: the compare's default."""
    hosts: str | None = None
    bandwidth: bool = False
    scaling: str = "weak"
    resumed: list[str] = field(default_factory=list)
    """The commands that resumed this compare, in order."""
    left_out: list[str] = field(default_factory=list)
    """Family members left out when planning (not installed), one line each, for the report."""
    job_shrink: str | None = None
    """What planning said when it shrank the job for CPU devices (None: it did not)."""
    repeat: int = 1
    """Rounds of every run (`compare --repeat`); a plan written before rounds ran one."""
    cold_cache: bool = False
    """Every run compiles from empty caches of its own (`compare --cold-cache`); a plan written
    before it was recorded shared the caches."""

    def __post_init__(self) -> None:
        self.configs = distinct_configs(self.configs)

    def to_json(self) -> str:
        options = {
            "timeout": self.timeout,
            "hosts": self.hosts,
            "bandwidth": self.bandwidth,
            "scaling": self.scaling,
            "repeat": self.repeat,
            "cold_cache": self.cold_cache,
        }
        record: dict[str, Any] = {
            "command": self.command,
            "options": options,
            "configs": [config.to_dict() for config in self.configs],
            "left_out": self.left_out,
            "job_shrink": self.job_shrink,
        }
        if self.resumed:
            record["resumed"] = self.resumed
        return json.dumps(record, indent=2)

    @classmethod
    def read(cls, path: Path) -> ComparePlan:
        try:
            record = read_json_file(path, str(path))
        except UsageError as error:
            raise UsageError(f"{error}; the plan is lost") from None
        try:
            return cls.from_record(record)
        except UsageError as error:
            raise UsageError(f"{path} is not a compare plan: {error}") from None

    @classmethod
    def from_record(cls, record: object) -> ComparePlan:
        if not isinstance(record, dict) or not isinstance(record.get("configs"), list):
            raise UsageError("it holds no list of configs")
        options = record.get("options", {})
        if not isinstance(options, dict):
            raise UsageError("its options are not an object")
        timeout, hosts = options.get("timeout"), options.get("hosts")
        bandwidth, scaling = options.get("bandwidth", False), options.get("scaling", "weak")
        repeat, cold_cache = options.get("repeat", 1), options.get("cold_cache", False)
        resumed, command = record.get("resumed", []), record.get("command")
        left_out, job_shrink = record.get("left_out", []), record.get("job_shrink")
        if timeout is not None and not (_is_number(timeout) and math.isfinite(timeout) and timeout > 0):
            raise UsageError(f"timeout {timeout!r} is not a positive number of seconds")
        if not (hosts is None or isinstance(hosts, str)) or not isinstance(bandwidth, bool):
            raise UsageError("its hosts or bandwidth option is not what compare records")
        if not isinstance(cold_cache, bool):
            raise UsageError(f"cold_cache {cold_cache!r} is not true or false")
        if not (isinstance(repeat, int) and not isinstance(repeat, bool) and repeat >= 1):
            raise UsageError(f"repeat {repeat!r} is not a number of rounds (1 or more)")
        if scaling not in SCALINGS:
            raise UsageError(f"scaling {scaling!r} is not one of {', '.join(SCALINGS)}")
        if not (command is None or isinstance(command, str)) or not isinstance(resumed, list):
            raise UsageError("its command or resume list is not what compare records")
        if not isinstance(left_out, list) or not (job_shrink is None or isinstance(job_shrink, str)):
            raise UsageError("its planning notes are not what compare records")
        configs = [RunConfig.from_dict(config) for config in record["configs"]]
        return cls(
            command,
            configs,
            timeout,
            hosts,
            bandwidth,
            scaling,
            [str(line) for line in resumed],
            [str(line) for line in left_out],
            job_shrink,
            repeat,
            cold_cache,
        )


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def distinct_configs(configs: list[RunConfig]) -> list[RunConfig]:
    """Each run of a plan once, in plan order: a plan listing one config three times (an edited
    or merged compare.json) resumes to one row per run_id, not three. One run_id with two
    different configs is no plan to resume, as either would be a guess: refused."""
    by_id: dict[str, RunConfig] = {}
    for config in configs:
        if by_id.setdefault(config.run_id, config) != config:
            raise UsageError(f"run {config.run_id} is planned twice with different configs")
    return list(by_id.values())
