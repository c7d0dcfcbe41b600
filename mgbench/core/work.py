"""The work of one training sample, as a model declares it (`ModelSpec.work`).

A row's FLOPs, achieved TFLOP/s and share of the peak (`records.peak`) start from the work of
one sample of its model at its input size: the forward and the backward, a multiply-add counted
as 2 FLOPs. How that work is known is the model's to declare, as a `Work`:

* `CountedOnReference`: counted on the reference architecture by the framework that builds it,
  in that framework's own environment (`python -m` its counter), since no closed form gives a
  DenseNet's or an Inception's FLOPs: the catalogue's networks are counted so;
* a closed form: a `Work` whose `per_sample` computes the figures from the shape it holds, with
  no framework at all (a transformer language model's 6N + 12 L d T FLOPs per token).

Whoever asks (the runner, which imports no framework) hands `per_sample` the means to count on
a reference (`ReferenceCount`); a closed form leaves it unused.
"""

from __future__ import annotations

import dataclasses
import reprlib
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Protocol

from mgbench.core.errors import UsageError
from mgbench.core.schema import check_fields


@dataclass(frozen=True)
class ModelWork:
    """One sample's training step at one input size."""

    flops_per_sample: float
    """Forward + backward FLOPs (a multiply-add counts 2)."""
    saved_elements_per_sample: float
    """Elements of the tensors the forward keeps for the backward (parameters excluded)."""

    @classmethod
    def from_record(cls, record: object) -> ModelWork:
        """A count read back (a counter's output, `runner.counting`'s cache, which may be another
        version's or damaged): an object of exactly these fields, positive numbers, else a UsageError."""
        names = {field.name for field in dataclasses.fields(cls)}
        if not isinstance(record, dict) or set(record) != names:
            raise UsageError(f"not a count of work: {reprlib.repr(record)}")
        check_fields(record, cls, "not a count of work")
        if not all(value > 0 for value in record.values()):
            raise UsageError(f"not a count of work: {reprlib.repr(record)} holds a number that is not positive")
        return cls(**record)


class ReferenceCount(Protocol):
    """Counts `model`'s work at `input_size` on `reference`'s architecture (None: it cannot here)."""

    def __call__(self, reference: CountedOnReference, model: str, input_size: int) -> ModelWork | None: ...


class Work(ABC):
    """How a model's work per training sample is known."""

    @abstractmethod
    def per_sample(self, model: str, input_size: int, count: ReferenceCount) -> ModelWork | None:
        """The work of one training sample of `model` at `input_size` (px, or tokens), forward and
        backward; `count` counts on a reference architecture for a kind that is counted. None:
        not known here."""


@dataclass(frozen=True)
class CountedOnReference(Work):
    """Counted on the reference architecture, in the environment of the framework that builds it:
    `python -m <counter> MODEL INPUT_SIZE` prints the `ModelWork` of one sample as a JSON object."""

    framework: str
    """The framework whose environment's interpreter runs the counter."""
    counter: str
    """The module that counts, in that framework's package."""
    architecture: str
    """The package whose architecture is counted: its version in that environment names the count
    (a later version may build the model otherwise)."""

    def per_sample(self, model: str, input_size: int, count: ReferenceCount) -> ModelWork | None:
        return count(self, model, input_size)
