"""Speed-up, scaling efficiency and per-device throughput of each row, kept in the results file.

They are derived from the rows themselves: a framework/strategy's throughput at N devices over
its throughput at its smallest device count (normally 1) is the speed-up, over the device ratio
the efficiency (a fraction). A script reading `results.jsonl` gets them beside the figures they
come from; they are recomputed whenever the summary is, so a resumed compare's rows agree.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from mgbench.records.results import results_file_bytes, write_json_atomically

SCALING_FIELDS = ("speedup", "scaling_efficiency_fraction", "images_per_sec_per_device")


def scaling_figures(records: list[dict[str, Any]]) -> list[dict[str, float | None]]:
    """Per record, in order: its SCALING_FIELDS (None where the row did not finish)."""
    groups: dict[tuple[str | None, str | None], list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        if record.get("status") == "ok" and record.get("images_per_sec"):
            groups[(record["framework"], record["strategy"])].append(record)
    figures = []
    for record in records:
        group = groups.get((record.get("framework"), record.get("strategy")), [])
        if record not in group:
            figures.append(dict.fromkeys(SCALING_FIELDS))
            continue
        base = min(group, key=lambda row: row["devices"])
        speedup = record["images_per_sec"] / base["images_per_sec"]
        figures.append(
            {
                "speedup": speedup,
                "scaling_efficiency_fraction": speedup / (record["devices"] / base["devices"]),
                "images_per_sec_per_device": record["images_per_sec"] / record["devices"],
            }
        )
    return figures


def add_scaling_figures(path: Path) -> None:
    """Rewrite the results file atomically with every row's SCALING_FIELDS; a line that cannot be
    read stays as it is, byte for byte, and every other field of a row (known or not) is kept."""
    lines = results_file_bytes(path).decode("utf-8", "surrogateescape").splitlines()
    parsed: list[dict[str, Any] | None] = []
    for line in lines:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            record = None
        parsed.append(record if isinstance(record, dict) else None)
    records = [record for record in parsed if record is not None]
    figures = iter(scaling_figures(records))
    text = "".join(
        (json.dumps({**record, **next(figures)}) if record is not None else line) + "\n"
        for line, record in zip(lines, parsed, strict=True)
        if line.strip()
    )
    write_json_atomically(path, text.encode("utf-8", "surrogateescape"))
