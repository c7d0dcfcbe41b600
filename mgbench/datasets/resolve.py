"""From a `--dataset` string to its description: the one module that knows every dataset reader.

The readers (`chestxray`, `labelmap`, `imagefolder`) build on `description`; this module sits
above them all, so no dataset module imports another in a circle. The parent checks the dataset
once before launching (`check_dataset`) and records what it found in the config; every reader of
a run takes the dataset from `dataset_for`, so all of them leave out the same files and scale
wide pixels alike. `compare --resume` checks it again (`recheck_dataset`): an image damaged since
the compare started is named before anything launches, not by the run that reaches it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from mgbench.core.config import RunConfig
from mgbench.core.errors import UsageError
from mgbench.core.job import Job
from mgbench.core.models import ModelSpec
from mgbench.core.target import TargetMetric
from mgbench.datasets import chestxray, imagefolder, labelmap
from mgbench.datasets.check import check_files
from mgbench.datasets.description import DatasetDescription, parse_dataset, shown_names
from mgbench.datasets.encoded import decode_site
from mgbench.datasets.parallel import ProgressCallback
from mgbench.datasets.tokens import TokenDataset

Dataset = DatasetDescription | TokenDataset
"""A real dataset: images with their labels, or a language model's token stream."""


def describe_dataset(text: str) -> Dataset | None:
    """The description for a `--dataset` string, every file it lists; None for synthetic data."""
    kind, root = parse_dataset(text)
    if root is None:
        return None
    readers: dict[str, Callable[[Path], Dataset]] = {
        "chestxray": chestxray.describe,
        "labels": labelmap.describe,
        "imagefolder": imagefolder.describe,
        "tokens": TokenDataset.describe,
    }
    return readers[kind](root)


def dataset_for(job: Job) -> Dataset | None:
    """What a job trains on: its images less those the check left out, with the range of its
    wide images, or its token stream (None for synthetic data)."""
    description = describe_dataset(job.dataset)
    if isinstance(description, DatasetDescription):
        return description.as_checked(set(job.skipped_images), job.bit_depth)
    return description


def task_for(job: Job) -> tuple[Dataset | None, ModelSpec]:
    """What a run of `job` trains on (`dataset_for`; None: synthetic data) and the model as that
    dataset's task shapes it (its outputs and loss, `DatasetDescription.task_spec`)."""
    dataset = dataset_for(job)
    return dataset, dataset.task_spec(job.spec) if dataset else job.spec


def check_dataset(
    job: Job,
    configs: list[RunConfig],
    workers: int | None = None,
    on_progress: ProgressCallback = lambda done, total: None,
    on_note: Callable[[str], None] = lambda line: None,
) -> Job:
    """Read and check the job's dataset in the parent, before any run starts (each run would fail
    alike): its labels, every image file (`check.check_files`), and each of `configs`' batches
    against what is left. Returns `job` with what the check found, for every run to read: the range of
    wide images and, with `skip_bad_images`, the files left out. Without it, files that cannot be
    decoded are one UsageError naming them all, as is a `--target-metric` its validation does not
    give (before the images are read). What reading the labels decided that the user
    should hear (`DatasetDescription.notes`) goes to `on_note`, a line each, as do, for
    `--decode gpu`, the images its loaders re-encode (`encoded.device_file`). A dataset of another
    input than the model's (a token stream for an image model, images for a language model) is
    one UsageError; a token stream is checked against each config's global batch and sequence
    length (`TokenDataset.check_batch`) and changes nothing of the job."""
    description = describe_dataset(job.dataset)
    if description is None:
        return job
    if refusal := description.input_refusal(job.spec):
        raise UsageError(refusal)
    if job.target_metric is not None:
        TargetMetric.parse(job.target_metric).check_given(description.task_spec(job.spec).objective)
    for note in description.notes:
        on_note(note)
    if isinstance(description, TokenDataset):
        for run in configs:
            description.check_batch(run.global_batch, run.job.input_size)
        return job
    files = description.files
    found = check_files(files, workers, on_progress)
    if len(found.bad) == len(files):
        raise UsageError(
            f"{description.root}: none of its {len(files)} images can be decoded: {found.listing(description.root, 5)}"
        )
    if found.bad and not job.skip_bad_images:
        raise UsageError(
            f"{description.root}: {len(found.bad)} of {len(files)} images cannot be decoded: "
            f"{found.listing(description.root)}; --skip-bad-images leaves them out"
        )
    if found.reencoded and decode_site(job.decode.on_device, files).on_device:
        names = shown_names([os.path.relpath(path, description.root) for path in found.reencoded])
        on_note(
            f"--decode gpu: {len(found.reencoded)} image(s) under JPEG names are not 8-bit RGB or grayscale "
            f"JPEGs ({names}); the loaders hand them to the device decoder re-encoded as JPEGs"
        )
    checked = job.with_changes(bit_depth=found.bit_depth, skipped_images=tuple(found.bad))
    usable = description.as_checked(set(found.bad), found.bit_depth)
    for run in configs:
        usable.check_batch(run.global_batch, run.devices)
    return checked


def recheck_dataset(
    recorded: Job,
    configs: list[RunConfig],
    workers: int | None = None,
    on_progress: ProgressCallback = lambda done, total: None,
    on_note: Callable[[str], None] = lambda line: None,
) -> None:
    """The dataset of a `recorded` job (checked when its compare started) checked again as a
    new compare checks it, before `configs` launch: an image that cannot be decoded now fails a
    run after start-up, and one left out now but not then would make the runs to come train on
    other images than the rows already done. Either is one UsageError naming the images."""
    checked = check_dataset(recorded, configs, workers, on_progress, on_note)
    damaged = sorted(set(checked.skipped_images) - set(recorded.skipped_images))
    if damaged:
        _, root = parse_dataset(recorded.dataset)
        shown = shown_names([os.path.relpath(path, root) for path in damaged])
        raise UsageError(
            f"{root}: {len(damaged)} image(s) cannot be decoded now that could when this compare started: {shown}; "
            "the runs to come would train on other images than those done: restore them or start a new compare"
        )
