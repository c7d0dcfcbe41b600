"""What one training sample of a model is: an image, or a sequence of tokens.

A model declares its input (`ModelSpec.input`) and a job sizes it (`Job.input`: `--image-size`,
`--seq-len`). Everything that depends on what a sample is asks the input object instead of
assuming images: the unit a rate is counted in (`unit`, `per_sample`), whether a data format
applies (`has_layout`), what the input is called in a table (`describe`), and the one size the
work per sample and the weights depend on (`extent`: an image's side in px, a sequence's tokens).

Rows keep one rate, samples per second (`samples_per_sec`); reports show it in the unit the
model declares, so an image row still reads img/s and a language model's reads tokens/s (an LM
sample is `seq_len` tokens).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar


@dataclass(frozen=True)
class RateUnit:
    """The unit a rate is shown in: `name` per second, `per_sample` of them in one sample."""

    name: str
    per_sample: int = 1
    one: str = ""
    """One of them, as a sentence names it: `image`, `token`."""
    long_label: str = ""
    """The rate as a table's heading or a chart's axis spells it, where that is not `label`:
    image reports have always headed it `images/sec`."""

    @property
    def label(self) -> str:
        """As a column heads it: `img/s`, `tokens/s`."""
        return f"{self.name}/s"

    @property
    def heading(self) -> str:
        """As a table's heading or a chart's axis spells it: `images/sec`, `tokens/s`."""
        return self.long_label or self.label

    def of(self, samples_per_sec: float) -> float:
        """A rate in samples per second, in this unit."""
        return samples_per_sec * self.per_sample


class SampleInput(ABC):
    """One training sample's input, as a model declares it and a job sizes it."""

    has_layout: ClassVar[bool]
    """Whether a data format (channels first or last) applies to it."""
    size_field: ClassVar[str]
    """The job's field (and, with dashes, the option) that sizes it: `image_size`, `seq_len`."""

    @property
    def size_option(self) -> str:
        """The option that sizes it: `--image-size`, `--seq-len`."""
        return "--" + self.size_field.replace("_", "-")

    @abstractmethod
    def sized(self, extent: int) -> SampleInput:
        """The same input at `extent` (px or tokens) instead of its own."""

    @abstractmethod
    def for_cpu(self) -> int:
        """The extent of a job shrunk to end in minutes on a laptop's cores."""

    @property
    @abstractmethod
    def extent(self) -> int:
        """The size the work per sample and the weights depend on (px or tokens)."""

    @property
    @abstractmethod
    def unit(self) -> RateUnit:
        """What a rate of these samples counts."""

    @abstractmethod
    def describe(self) -> str:
        """As a table names it: `224 px`, `1024 tokens`."""


@dataclass(frozen=True)
class ImageInput(SampleInput):
    """A square image of `size` px a side and `channels` colour channels."""

    size: int
    channels: int = 3
    has_layout: ClassVar[bool] = True
    size_field: ClassVar[str] = "image_size"

    def sized(self, extent: int) -> ImageInput:
        return ImageInput(extent, self.channels)

    def for_cpu(self) -> int:
        """64 px for a 224-px model, others scaled alike; a smaller model keeps its own."""
        return round(CPU_IMAGE_SIZE * self.size / CPU_IMAGE_BASE) if self.size > CPU_IMAGE_SIZE else self.size

    @property
    def extent(self) -> int:
        return self.size

    @property
    def unit(self) -> RateUnit:
        return IMAGES

    def describe(self) -> str:
        return f"{self.size} px"


@dataclass(frozen=True)
class TokenInput(SampleInput):
    """A sequence of `seq_len` token ids of a `vocabulary`, trained to predict each next token."""

    seq_len: int
    vocabulary: int
    has_layout: ClassVar[bool] = False
    size_field: ClassVar[str] = "seq_len"

    def sized(self, extent: int) -> TokenInput:
        return TokenInput(extent, self.vocabulary)

    def for_cpu(self) -> int:
        """At most `CPU_SEQ_LEN` tokens: attention's work grows with the square of the length."""
        return min(self.seq_len, CPU_SEQ_LEN)

    @property
    def extent(self) -> int:
        return self.seq_len

    @property
    def unit(self) -> RateUnit:
        return RateUnit("tokens", self.seq_len, one="token")

    def describe(self) -> str:
        return f"{self.seq_len} tokens"


CPU_IMAGE_SIZE = 64
"""The shrunk job's image side for a 224-px model; others scale with their own size."""
CPU_IMAGE_BASE = 224
CPU_SEQ_LEN = 64
"""The shrunk job's sequence length."""

IMAGES = RateUnit("img", one="image", long_label="images/sec")
"""The image models' unit: a sample is an image."""
