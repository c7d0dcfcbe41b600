"""The NIH ChestX-ray14 label file: `Data_Entry_2017.csv` and the official split lists.

The test split is NIH's `test_list.txt`; validation is a patient-hashed slice of
`train_val_list.txt` (the rest trains). Without both lists, all three splits are by patient
hash. A patient is never in two splits.

`Finding Labels` holds the findings of an image joined by `|`; `No Finding` means none of the
14, i.e. an all-zero row. The label order is fixed (NIH's own), so column k means the same
finding in every framework, every run and every AUC table.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from mgbench.core.errors import UsageError
from mgbench.datasets.description import DatasetDescription, hashed_split, read_label_csv, shown_names, splits_by_name
from mgbench.datasets.images import index_images, resolve_files

LABEL_FILE = "Data_Entry_2017.csv"
TRAIN_LIST = "train_val_list.txt"
TEST_LIST = "test_list.txt"
IMAGE_COLUMN = "Image Index"
FINDINGS_COLUMN = "Finding Labels"
PATIENT_COLUMN = "Patient ID"
NO_FINDING = "No Finding"
NIH_LABELS: tuple[str, ...] = (
    "Atelectasis",
    "Cardiomegaly",
    "Effusion",
    "Infiltration",
    "Mass",
    "Nodule",
    "Pneumonia",
    "Pneumothorax",
    "Consolidation",
    "Edema",
    "Emphysema",
    "Fibrosis",
    "Pleural_Thickening",
    "Hernia",
)


def multi_hot(findings: str, where: str) -> np.ndarray:
    """One row of 14 zeros/ones for a `Finding Labels` cell such as `Effusion|Mass`.

    Only `No Finding` alone means all zeros: an empty cell or `No Finding` next to a finding is
    a damaged row, and reading either as healthy would train on wrong labels without a word.
    """
    row = np.zeros(len(NIH_LABELS), dtype=np.float32)
    names = [name.strip() for name in findings.split("|") if name.strip()]
    if not names:
        raise UsageError(f"{where}: empty {FINDINGS_COLUMN!r}; write {NO_FINDING!r} for an image without findings")
    if names == [NO_FINDING]:
        return row
    if NO_FINDING in names:
        raise UsageError(f"{where}: {NO_FINDING!r} cannot be combined with findings ({findings!r})")
    for name in names:
        if name not in NIH_LABELS:
            raise UsageError(f"{where}: unknown finding {name!r}; known: {NO_FINDING}, {', '.join(NIH_LABELS)}")
        row[NIH_LABELS.index(name)] = 1.0
    return row


def read_entries(csv_path: Path) -> pd.DataFrame:
    """The label file as a frame with `file`, `patient` and a (N, 14) `targets` array in `.attrs`."""
    frame = read_label_csv(csv_path, (IMAGE_COLUMN, FINDINGS_COLUMN))
    if frame.empty:
        raise UsageError(f"{csv_path}: no rows")
    # Row numbers as a spreadsheet shows them: the header is line 1.
    targets = np.stack(
        [multi_hot(cell, f"{csv_path} line {line + 2}") for line, cell in enumerate(frame[FINDINGS_COLUMN])]
    )
    patients = frame[PATIENT_COLUMN] if PATIENT_COLUMN in frame.columns else frame[IMAGE_COLUMN]
    entries = pd.DataFrame({"file": frame[IMAGE_COLUMN].str.strip(), "group": patients})
    duplicated = entries["file"][entries["file"].duplicated()]
    if not duplicated.empty:
        raise UsageError(f"{csv_path}: image {duplicated.iloc[0]!r} is listed twice")
    entries.attrs["targets"] = targets
    return entries


def read_split_list(path: Path) -> set[str]:
    return {line.strip() for line in path.read_text().splitlines() if line.strip()}


def split_names(root: Path, entries: pd.DataFrame) -> np.ndarray:
    """Each row's split: `test` as NIH's `test_list.txt` says where both lists exist, validation
    hashed by patient from the rest; all three by patient hash otherwise. An image in both lists,
    or a patient with images in both, is refused: the test split would score images of
    patients the model trained on."""
    train_list, test_list = root / TRAIN_LIST, root / TEST_LIST
    if not (train_list.exists() and test_list.exists()):
        return hashed_split(entries["group"])
    train_names, test_names = read_split_list(train_list), read_split_list(test_list)
    unlisted = [name for name in entries["file"] if name not in train_names and name not in test_names]
    if unlisted:
        raise UsageError(f"{root / LABEL_FILE}: image {unlisted[0]!r} is in neither {TRAIN_LIST} nor {TEST_LIST}")
    in_both = sorted(set(entries["file"]) & train_names & test_names)
    if in_both:
        raise UsageError(
            f"{root}: {len(in_both)} image(s) in both {TRAIN_LIST} and {TEST_LIST}: {shown_names(in_both)}"
        )
    is_test = entries["file"].isin(test_names).to_numpy()
    straddling = sorted(set(entries["group"][is_test]) & set(entries["group"][~is_test]))
    if straddling:
        raise UsageError(
            f"{root}: {len(straddling)} patient(s) with images in both {TRAIN_LIST} and {TEST_LIST}: "
            f"{shown_names(straddling)}; a patient's images belong to one split"
        )
    return np.where(is_test, "test", hashed_split(entries["group"], ("val",)))


def describe(root: Path) -> DatasetDescription:
    """A folder holding `Data_Entry_2017.csv` and the images (anywhere below it)."""
    csv_path = root / LABEL_FILE
    if not csv_path.is_file():
        raise UsageError(f"{root}: no {LABEL_FILE} (the NIH label file)")
    entries = read_entries(csv_path)
    files = resolve_files(list(entries["file"]), index_images(root), csv_path)
    rows = [f"{LABEL_FILE} line {line + 2} ({name})" for line, name in enumerate(entries["file"])]
    splits = splits_by_name(files, entries.attrs["targets"], split_names(root, entries), root, rows)
    return DatasetDescription("chestxray", root, NIH_LABELS, True, *splits)
