"""What a table of a compare's rows shows their rate in, and what a language model's rows add.

A compare trains one job, so every table, chart and sentence of its rows shows the rate in one
unit, its model's (`core.units.rate_unit`): img/s for an image model, as reports always have;
tokens/s for a language model, whose sample is `seq_len` tokens. A language model's rows also
show the rate per device and their model-FLOPs utilisation (MFU: `peak_fraction`, the achieved
TFLOP/s of the closed-form FLOPs over the devices' dense peak, `records.peak`), and the report
says under the table what those FLOPs are (`mfu_sentence`). Their tables show each device's
peak memory allocated and reserved, and the largest batch per GPU that fits, which is modelled,
not measured, as the sentence under the table says (`memory_sentence`).
"""

from __future__ import annotations

import pandas as pd

from mgbench.core.gpt2 import GPT2
from mgbench.core.inputs import IMAGES, RateUnit
from mgbench.core.models import ModelSpec, known_model
from mgbench.core.units import rate_unit
from mgbench.reports.columns import Col

MFU = "MFU"
"""What a language model's share of the peak is called: its model-FLOPs utilisation."""


def _first(frame: pd.DataFrame) -> pd.Series | None:
    return None if frame.empty or Col.MODEL not in frame else frame.iloc[0]


def row_unit(row: pd.Series) -> RateUnit:
    """The unit a row's rate is shown in: its model's, at its sequence length (`core.units.rate_unit`)."""
    return rate_unit(row.get(Col.MODEL), row.get(Col.SEQ_LEN))


def frame_unit(frame: pd.DataFrame) -> RateUnit:
    """The unit `frame`'s rows show their rate in: its first row's (a compare trains one job);
    images for a frame without rows."""
    first = _first(frame)
    return IMAGES if first is None else row_unit(first)


def frame_model(frame: pd.DataFrame) -> ModelSpec | None:
    """The model `frame`'s rows trained (a compare trains one): its first row's, None for a frame
    without rows or a model the catalogue does not hold."""
    first = _first(frame)
    return None if first is None else known_model(first[Col.MODEL])


def row_language_model(row: pd.Series) -> GPT2 | None:
    """The shape of the language model a row trained (None: an image model, or a model the
    catalogue does not hold)."""
    spec = known_model(row.get(Col.MODEL))
    return None if spec is None else spec.language_model


def language_model(frame: pd.DataFrame) -> GPT2 | None:
    """The shape of the language model `frame`'s rows trained (None: an image model's, or unknown)."""
    spec = frame_model(frame)
    return None if spec is None else spec.language_model


def mfu_sentence(frame: pd.DataFrame) -> str | None:
    """For a language model's rows, the FLOPs their MFU counts and the peak it is taken over:
    `MFU: 6N + 12·L·d·T FLOPs per token = 855,383,040 for gpt2 at 1024 tokens (...), over the
    dense bf16 peak of each device (989.5 TFLOP/s, vendor: NVIDIA H100 SXM)`. None for an image
    model's rows, whose share of the peak is counted on the reference architecture."""
    shape, first = language_model(frame), _first(frame)
    if shape is None or first is None:
        return None
    tokens = frame_unit(frame).per_sample
    counted = (
        f"MFU: 6N + 12·L·d·T FLOPs per token = {shape.flops_per_token(tokens):,} for {first[Col.MODEL]} at "
        f"{tokens} tokens (N = {shape.parameters(positions=False):,} weights without the position embedding, "
        f"L = {shape.layers} layers, d = {shape.width} wide, T = {tokens} tokens)"
    )
    peaks = frame[frame[Col.PEAK_TFLOPS].notna()] if Col.PEAK_TFLOPS in frame else frame.iloc[:0]
    over = f"over the dense {first[Col.PRECISION]} peak of each device"
    if peaks.empty:
        return f"{counted}, {over}: none is known for these devices, so no row has an MFU."
    peak = peaks.iloc[0]
    return f"{counted}, {over} ({peak[Col.PEAK_TFLOPS]:g} TFLOP/s, {peak[Col.PEAK_SOURCE]})."


LARGEST_BATCH_SENTENCE = (
    "max batch/GPU (est.): modelled, not measured: the peak allocated taken as linear in the batch per "
    "GPU, through each row's peak at its batch with the activation estimate's slope (or fitted to its "
    "rounds' peaks at two batches), up to the GPU's memory (--gpu-memory-gb where lower); reserved is "
    "what the framework's allocator held, allocated or cached."
)


def memory_sentence(frame: pd.DataFrame) -> str | None:
    """For a language model's rows of which one has a largest batch, that it is an estimate and
    what it stands on (`records.largest_batch`; each row's run details name its own basis)."""
    if language_model(frame) is None or Col.LARGEST_BATCH_ESTIMATE not in frame:
        return None
    return LARGEST_BATCH_SENTENCE if frame[Col.LARGEST_BATCH_ESTIMATE].notna().any() else None


def model_sentences(frame: pd.DataFrame) -> str | None:
    """What a language model's table says under it: what its MFU counts and what its largest
    batch stands on, a paragraph each (None for an image model's)."""
    return "\n\n".join(s for s in (mfu_sentence(frame), memory_sentence(frame)) if s) or None
