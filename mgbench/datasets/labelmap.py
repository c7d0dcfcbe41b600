"""`labels:PATH`: any multi-label image set given as a `{file: labels}` mapping.

PATH is the mapping file (`.csv` with columns `file` and `labels`, labels joined by `|`, or
`.json` mapping each file to a list of labels or a `|`-joined string) with the images in its
folder, or a folder holding `labels.csv` / `labels.json`. An optional CSV column `split`
(`train`/`val`/`test`) fixes the split; a held-out split it does not name (or all of them,
without the column) is a stable hash of the file names of the training rows. Label names
are the sorted union of all labels, so their order does not depend on row order. A file listed
twice is refused (its two rows could hold two label sets, or two splits); a row without labels
is an image negative for every label, which the check before launching says once.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from mgbench.core.errors import UsageError
from mgbench.datasets.description import (
    SPLITS,
    DatasetDescription,
    held_out_of_training,
    read_label_csv,
    shown_names,
    splits_by_name,
)
from mgbench.datasets.images import index_images, resolve_files

MAPPING_NAMES = ("labels.csv", "labels.json")


def find_mapping(path: Path) -> Path:
    if path.is_file():
        return path
    for name in MAPPING_NAMES:
        if (path / name).is_file():
            return path / name
    raise UsageError(f"{path}: no {' or '.join(MAPPING_NAMES)} mapping images to labels")


def read_csv_mapping(path: Path) -> pd.DataFrame:
    frame = read_label_csv(path, ("file", "labels"))
    if "split" in frame.columns:
        bad = frame.index[~frame["split"].isin(SPLITS)]
        if len(bad):
            raise UsageError(
                f"{path} line {bad[0] + 2}: split must be train, val or test, got {frame['split'][bad[0]]!r}"
            )
    return frame


def read_json_mapping(path: Path) -> pd.DataFrame:
    try:
        mapping = json.loads(path.read_text(), object_pairs_hook=_refuse_repeated_keys)
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as error:
        raise UsageError(f"cannot read label file {path}: {error}") from None
    except RecursionError:
        raise UsageError(f"cannot read label file {path}: it nests past Python's recursion limit") from None
    except UsageError as error:
        raise UsageError(f"{path}: {error}") from None
    if not isinstance(mapping, dict):
        raise UsageError(f"{path}: expected an object mapping file names to labels")
    rows = []
    for name, labels in mapping.items():
        if isinstance(labels, str):
            labels = labels.split("|")
        if not isinstance(labels, list) or not all(isinstance(label, str) for label in labels):
            raise UsageError(f"{path}: labels of {name!r} must be a list of strings or a '|'-joined string")
        rows.append({"file": name, "labels": "|".join(labels)})
    return pd.DataFrame(rows, columns=["file", "labels"])


def _refuse_repeated_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """A JSON object as a dict, refusing a key given twice (`json` keeps the last one silently)."""
    mapping = dict(pairs)
    if len(mapping) < len(pairs):
        repeated = sorted(key for key, count in Counter(key for key, _ in pairs).items() if count > 1)
        raise UsageError(f"{shown_names(repeated)} listed twice")
    return mapping


def row_names(mapping: Path, frame: pd.DataFrame) -> list[str]:
    """Each row as an error names it: its CSV line (the header is line 1) or its JSON key."""
    if mapping.suffix.lower() == ".json":
        return list(frame["file"])
    return [f"{mapping.name} line {row + 2} ({name})" for row, name in enumerate(frame["file"])]


def describe(path: Path) -> DatasetDescription:
    mapping = find_mapping(path)
    frame = read_json_mapping(mapping) if mapping.suffix.lower() == ".json" else read_csv_mapping(mapping)
    if frame.empty:
        raise UsageError(f"{mapping}: no images listed")
    rows = row_names(mapping, frame)
    repeated = [row for row, twice in zip(rows, frame["file"].duplicated(keep=False)) if twice]
    if repeated:
        raise UsageError(f"{mapping}: image(s) listed more than once: {shown_names(repeated)}; list each image once")
    label_sets = [[label.strip() for label in cell.split("|") if label.strip()] for cell in frame["labels"]]
    names = tuple(sorted({label for labels in label_sets for label in labels}))
    if not names:
        raise UsageError(f"{mapping}: no labels at all")
    targets = np.zeros((len(frame), len(names)), dtype=np.float32)
    for row, labels in enumerate(label_sets):
        targets[row, [names.index(label) for label in labels]] = 1.0
    root = mapping.parent
    files = resolve_files(list(frame["file"]), index_images(root), mapping)
    named = frame["split"].to_numpy(dtype=object) if "split" in frame.columns else np.full(len(frame), "train", object)
    splits = splits_by_name(files, targets, held_out_of_training(named, frame["file"]), root, rows)
    unlabelled = [row for row, labels in zip(rows, label_sets) if not labels]
    said = f"{len(unlabelled)} image(s) without labels, read as negative for every label: {shown_names(unlabelled)}"
    notes = (f"{mapping}: {said}",) if unlabelled else ()
    return DatasetDescription("labels", root, names, True, *splits, notes=notes)
