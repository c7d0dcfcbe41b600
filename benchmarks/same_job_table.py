"""The same job's rows side by side: `python benchmarks/same_job_table.py [--target AUC] FOLDER...`.

Per ok row of each compare folder (`benchmarks/gpu_same_job.sh`): framework, start (`init` and
its digest), first-step loss, validation AUC after each epoch, test AUC, time to train, and the
time to the first validation at or above the target AUC, read off the epoch rows'
`elapsed_seconds` (from the first training step, a compiled run's compile step included), and
with the run's start-up added. Then, per folder, the spread of the
test AUCs (largest minus smallest).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def time_to_target(row: dict, target: float) -> tuple[int, float] | None:
    """The first epoch whose validation AUC reached `target`, and the seconds to the end of it."""
    for epoch in row.get("epoch_metrics") or []:
        if (epoch.get("val_auc") or 0.0) >= target and "elapsed_seconds" in epoch:
            return int(epoch["epoch"]), float(epoch["elapsed_seconds"])
    return None


def lines(folder: Path, target: float) -> list[str]:
    rows = [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]
    out = [
        f"== {folder.name}",
        "framework     GPUs  init       digest        loss@1  val AUC per epoch              test AUC  train s  speed-up"
        "  to target s (+start-up)",
    ]
    aucs = []
    one_device = {
        row["framework"]: row["time_to_train_seconds"] for row in rows if row["status"] == "ok" and row["devices"] == 1
    }
    for row in rows:
        if row["status"] != "ok":
            out.append(f"{row['framework']:<13} {row['status']}: {(row.get('error') or '').splitlines()[:1]}")
            continue
        vals = " ".join(f"{e['val_auc']:.3f}" for e in row["epoch_metrics"])
        test = row["test_metrics"].get("auc")
        aucs.append(test)
        reached = time_to_target(row, target)
        extra = row.get("startup_seconds") or 0.0
        to_target = f"{reached[1]:.1f} (+{extra:.1f}) at epoch {reached[0]}" if reached else "not reached"
        init = Path(row.get("init") or "framework").name
        alone = one_device.get(row["framework"])
        speedup = f"{alone / row['time_to_train_seconds']:.2f}x" if alone and row["devices"] > 1 else "-"
        out.append(
            f"{row['framework']:<13} {row['devices']:>4}  {init:<10} {row.get('init_digest') or '-':<13} "
            f"{row['step_losses'][0]:.4f}  {vals:<30} {test:.4f}    {row['time_to_train_seconds']:7.1f}  {speedup:>8}"
            f"  {to_target}"
        )
    if len(aucs) > 1:
        out.append(
            f"test AUC spread: {max(aucs) - min(aucs):.4f} ({min(aucs):.4f}-{max(aucs):.4f}); target AUC {target}"
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--target", type=float, default=0.75, help="validation AUC to time (default 0.75)")
    args = parser.parse_args()
    for folder in args.folders:
        print("\n".join(lines(folder, args.target)))


if __name__ == "__main__":
    main()
