"""The same-start check: did the frameworks train the same job from the same point?

Every row records the digest of the weights it started from (`init_digest`) and its first
training losses (`step_losses`). With one starting point (`--init same` or a weights file) and
the same batches (synthetic data is drawn per sample from the seed; real data goes through the
shared sampler), the first step's loss is the same function of the same numbers in every
framework, so in fp32 the frameworks' first losses agree to rounding. The check sets each row
against the reference framework's (pytorch where it ran) and names any that does not agree,
with how far apart they are at the step the rows share last (the 10th where they ran 10).
Rows are compared at one global batch (weak scaling's larger batches train on other samples).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

from mgbench.core.wording import counted
from mgbench.reports.columns import Col

REFERENCE_FRAMEWORK = "pytorch"
RELATIVE_TOLERANCE = 1e-3
"""First-step losses within this share of the reference's agree: fp32 kernels differ between
frameworks in their reduction order, which moves a loss by far less."""
CHECKED_PRECISION = "fp32"
"""Only fp32 rows are held to the tolerance: bf16 and fp16 round each framework's kernels differently."""


@dataclass(frozen=True)
class Disagreement:
    run_id: str
    first: float
    """Relative difference of the first step's loss from the reference's."""
    last_step: int
    last: float
    """Relative difference at `last_step` (1-based), the last step both recorded."""


@dataclass(frozen=True)
class SameStart:
    reference: str
    """The reference run of each global batch compared, by run id."""
    compared: int
    """Runs set against a reference (the references not counted)."""
    digests: tuple[str, ...]
    own_initialisers: tuple[str, ...]
    """Runs that started from their framework's own initialiser (no digest)."""
    disagreements: tuple[Disagreement, ...]
    checked: bool
    """False where the rows are not fp32: their losses are shown, not held to the tolerance."""
    unmatched: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """What frameworks declare they cannot match of the job, and which frameworks declare it."""

    def sentence(self) -> str:
        """One line for the console, summary.md and the report."""
        if not self.digests:
            return (
                "Same start: not checked, every run started from its framework's own initialiser "
                "(--init framework); --init same gives them one starting point."
            )
        others = self.compared
        against = f"within {RELATIVE_TOLERANCE:.0e} (relative, {CHECKED_PRECISION}) with the reference run of their global batch ({self.reference})"
        if not self.checked:
            verdict = f"first losses are held to a tolerance in {CHECKED_PRECISION} only"
        elif not self.disagreements:
            verdict = f"the first-step losses of {counted(others, 'run')} agree {against}"
        else:
            differ = "; ".join(
                f"{d.run_id} differs by {d.first:.1e} at step 1 and {d.last:.1e} at step {d.last_step}"
                for d in self.disagreements
            )
            agreeing = others - len(self.disagreements)
            verdict = f"the first-step losses of {agreeing} of {counted(others, 'run')} agree {against}; {differ}"
        parts = [verdict]
        if len(self.digests) > 1:
            parts.append(f"the runs started from {len(self.digests)} different weights ({', '.join(self.digests)})")
        else:
            parts.append(f"all from weights {self.digests[0]}")
        if self.own_initialisers:
            parts.append(f"{', '.join(self.own_initialisers)} started from its framework's own initialiser")
        parts += [f"{', '.join(names)} cannot match it: {what}" for what, names in self.unmatched.items()]
        return "Same start: " + "; ".join(parts) + "."


def _relative(value: float, reference: float) -> float:
    return abs(value - reference) / max(abs(reference), 1e-12)


def _losses(row: pd.Series) -> list[float]:
    """The row's first losses up to the first without a value (null: the loss diverged there),
    so a run that diverged is compared over the steps before it did."""
    losses = row.get(Col.STEP_LOSSES)
    finite = []
    for value in losses if isinstance(losses, list) else []:
        if not isinstance(value, int | float) or not math.isfinite(value):
            break
        finite.append(float(value))
    return finite


def _reference(rows: pd.DataFrame) -> pd.Series:
    """The row the others are set against: the reference framework's, else the first."""
    preferred = rows[rows[Col.FRAMEWORK] == REFERENCE_FRAMEWORK]
    return (preferred if not preferred.empty else rows).sort_values("devices").iloc[0]


def same_start(frame: pd.DataFrame) -> SameStart | None:
    """The check over a compare's rows (None: no two ok rows of one global batch with recorded
    losses). Rows are set against the reference's row of their own global batch: with weak
    scaling a larger device count trains a larger batch, whose loss differs."""
    if frame.empty or Col.STEP_LOSSES not in frame:
        return None
    rows = frame[frame[Col.STATUS] == "ok"]
    rows = rows[[bool(_losses(row)) for _, row in rows.iterrows()]]
    if len(rows) < 2:
        return None
    groups = [group for _, group in rows.groupby("global_batch") if len(group) > 1]
    if not groups:
        return None
    rows = pd.concat(groups)
    references = [_reference(group) for group in groups]
    disagreements = []
    for group, reference in zip(groups, references):
        expected = _losses(reference)
        for _, row in group.iterrows():
            if row[Col.RUN_ID] == reference[Col.RUN_ID]:
                continue
            losses = _losses(row)
            shared = min(len(losses), len(expected))
            first = _relative(losses[0], expected[0])
            if first > RELATIVE_TOLERANCE:
                last = _relative(losses[shared - 1], expected[shared - 1])
                disagreements.append(Disagreement(row[Col.RUN_ID], first, shared, last))
    digests = list(rows[Col.INIT_DIGEST]) if Col.INIT_DIGEST in rows else [None] * len(rows)
    checked = bool((rows[Col.PRECISION] == CHECKED_PRECISION).all())
    return SameStart(
        reference=", ".join(str(r[Col.RUN_ID]) for r in references),
        compared=len(rows) - len(references),
        digests=tuple(sorted({d for d in digests if isinstance(d, str)})),
        own_initialisers=tuple(str(r) for r, d in zip(rows[Col.RUN_ID], digests) if not isinstance(d, str)),
        disagreements=tuple(disagreements) if checked else (),
        checked=checked,
        unmatched=_unmatched(rows),
    )


def _unmatched(rows: pd.DataFrame) -> dict[str, tuple[str, ...]]:
    declared: dict[str, list[str]] = {}
    for framework, sentences in zip(rows[Col.FRAMEWORK], rows.get(Col.UNMATCHED, pd.Series([[]] * len(rows)))):
        for sentence in sentences if isinstance(sentences, list) else []:
            if framework not in declared.setdefault(sentence, []):
                declared[sentence].append(framework)
    return {sentence: tuple(names) for sentence, names in declared.items()}


def same_start_sentence(frame: pd.DataFrame) -> str | None:
    check = same_start(frame)
    return check.sentence() if check else None
