"""From a `--dataset` string to its description: the one module that knows every dataset reader.

The readers (`chestxray`, `labelmap`, `imagefolder`) build on `description`; this module sits
above them all, so no dataset module imports another in a circle.
"""

from __future__ import annotations

from mgbench.common.config import RunConfig
from mgbench.datasets import chestxray, imagefolder, labelmap
from mgbench.datasets.description import DatasetDescription, parse_dataset
from mgbench.datasets.images import check_decodable


def describe_dataset(text: str) -> DatasetDescription | None:
    """The description for a `--dataset` string; None for synthetic data."""
    kind, root = parse_dataset(text)
    if root is None:
        return None
    readers = {"chestxray": chestxray.describe, "labels": labelmap.describe, "imagefolder": imagefolder.describe}
    return readers[kind](root)


def check_dataset(text: str, configs: list[RunConfig]) -> DatasetDescription | None:
    """Read and check the dataset in the parent, before any run starts (each run would fail alike):
    its labels, that its images decode at all, and that each config's batch fits."""
    description = describe_dataset(text)
    if description is not None:
        check_decodable(description.train.files + description.val.files + description.test.files, description.root)
        for config in configs:
            description.check_batch(config.global_batch, config.devices)
    return description
