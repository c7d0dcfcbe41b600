"""The device kind, the data format and where images are decoded as typed values, asked by property (`kind.on_gpu`).

Both travel as plain strings (a config's JSON, a result row, a CSV column): a `StrEnum` member
is its string there and compares equal to it, so run folders written before read alike. Code
asks the property instead of comparing spellings, so a kind or format is named in one place.
"""

from __future__ import annotations

from enum import StrEnum


class DeviceKind(StrEnum):
    """What a run's devices are: NVIDIA GPUs, or CPU cores standing in for them."""

    CUDA = "cuda"
    CPU = "cpu"

    @property
    def on_gpu(self) -> bool:
        return self is DeviceKind.CUDA


class DataFormat(StrEnum):
    """Where an image batch keeps its colour channels: before (NCHW) or after (NHWC) the pixels."""

    CHANNELS_FIRST = "channels_first"
    CHANNELS_LAST = "channels_last"

    @property
    def channels_last(self) -> bool:
        return self is DataFormat.CHANNELS_LAST


class Decode(StrEnum):
    """Where a real dataset's JPEGs are decoded: by the loader's workers on the host (`cpu`), or
    as file bytes handed to the training device, which decodes and crops them (`gpu`)."""

    CPU = "cpu"
    GPU = "gpu"

    @property
    def on_device(self) -> bool:
        return self is Decode.GPU
