"""The same-start check (`reports/same_start.py`) over rows, and `--init` end to end on CPU."""

import json
from pathlib import Path

import pandas as pd
import pytest
from conftest import mgbench

from mgbench.core.initial_weights import read_weights_file
from mgbench.reports.same_start import RELATIVE_TOLERANCE, same_start

LOSSES = [2.30, 2.25, 2.20, 2.10]


def row(framework: str, devices: int = 1, losses=LOSSES, digest="abc", precision="fp32", batch=8) -> dict:
    return {
        "run_id": f"{framework}-x-{devices}cpu",
        "framework": framework,
        "devices": devices,
        "global_batch": batch,
        "status": "ok",
        "precision": precision,
        "init_digest": digest,
        "step_losses": list(losses),
    }


def test_rows_that_agree_pass_and_one_that_does_not_is_named_with_its_gap() -> None:
    off = [v * (1 + 10 * RELATIVE_TOLERANCE) for v in LOSSES]
    check = same_start(pd.DataFrame([row("gluon"), row("pytorch"), row("chainer", losses=off)]))
    assert check.reference == "pytorch-x-1cpu" and check.compared == 2
    assert [d.run_id for d in check.disagreements] == ["chainer-x-1cpu"]
    assert check.disagreements[0].first == pytest.approx(10 * RELATIVE_TOLERANCE)
    assert check.disagreements[0].last_step == len(LOSSES)
    assert "chainer-x-1cpu differs by 1.0e-02 at step 1" in check.sentence()
    close = [v * (1 + RELATIVE_TOLERANCE / 2) for v in LOSSES]
    assert not same_start(pd.DataFrame([row("pytorch"), row("gluon", losses=close)])).disagreements


def test_rows_are_compared_within_their_global_batch() -> None:
    """Weak scaling: 2 devices train twice the batch, whose loss is another one."""
    bigger = [v + 0.5 for v in LOSSES]
    frame = pd.DataFrame(
        [row("pytorch"), row("pytorch", 2, bigger, batch=16), row("gluon"), row("gluon", 2, bigger, batch=16)]
    )
    check = same_start(frame)
    assert not check.disagreements and check.compared == 2
    frame.loc[3, "step_losses"] = LOSSES
    assert [d.run_id for d in same_start(frame).disagreements] == ["gluon-x-2cpu"]


def test_other_starting_weights_and_own_initialisers_are_said() -> None:
    check = same_start(pd.DataFrame([row("pytorch"), row("gluon", digest="def"), row("chainer", digest=None)]))
    assert check.digests == ("abc", "def") and check.own_initialisers == ("chainer-x-1cpu",)
    assert "2 different weights" in check.sentence()
    none = same_start(pd.DataFrame([row("pytorch", digest=None), row("gluon", digest=None)]))
    assert none.sentence().startswith("Same start: not checked")


def test_what_a_framework_cannot_match_is_named_once_with_its_frameworks() -> None:
    frame = pd.DataFrame([row("pytorch"), row("gluon"), row("gluon", 2), row("keras-jax")])
    frame["unmatched"] = [[], ["biased variance"], ["biased variance"], ["biased variance"]]
    check = same_start(frame)
    assert check.unmatched == {"biased variance": ("gluon", "keras-jax")}
    assert check.sentence().endswith("gluon, keras-jax cannot match it: biased variance.")


def test_rows_without_two_finished_runs_give_no_check() -> None:
    """An interrupted compare's rows hold no figures (no global batch): no check, no error."""
    interrupted = {"run_id": "pytorch-ddp-1cpu", "framework": "pytorch", "status": "interrupted", "step_losses": []}
    assert same_start(pd.DataFrame([interrupted])) is None
    assert same_start(pd.DataFrame([interrupted, {**interrupted, "run_id": "pytorch-ddp-2cpu"}])) is None


def test_a_run_that_diverged_is_compared_over_the_steps_before_it_did() -> None:
    """Its losses from the step it diverged at are null: its first steps are still set against the
    reference's, and a run that diverged at its first step is left out."""
    off = [LOSSES[0] * (1 + 10 * RELATIVE_TOLERANCE), LOSSES[1], None, None]
    check = same_start(pd.DataFrame([row("pytorch"), row("gluon", losses=off), row("chainer", losses=[None] * 4)]))
    assert check.compared == 1 and [(d.run_id, d.last_step) for d in check.disagreements] == [("gluon-x-1cpu", 2)]
    assert same_start(pd.DataFrame([row("pytorch", losses=[LOSSES[0], None]), row("gluon")])).disagreements == ()


def test_bf16_rows_are_not_held_to_the_fp32_tolerance() -> None:
    check = same_start(pd.DataFrame([row("pytorch", precision="bf16"), row("gluon", precision="bf16", losses=[3.0])]))
    assert not check.checked and not check.disagreements
    assert same_start(pd.DataFrame([row("pytorch")])) is None


@pytest.mark.slow
def test_compare_rows_carry_the_init_digest_and_first_losses(tmp_path: Path) -> None:
    """One and two devices on one global batch from one start take the same first steps (the
    draw kept in the run folder). What --init framework writes instead is checked on the runs of
    tests/test_pytorch_data.py, which start from torch's own draw."""
    out = tmp_path / "same"
    done = mgbench(
        "compare", "--frameworks", "pytorch", "--gpus", "1,2", "--scaling", "strong", "--model", "tiny",
        "--steps", "3", "--init", "same", "--seed", "3", "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert {r["init"] for r in rows} == {"same"} and all(len(r["step_losses"]) == 3 for r in rows)
    assert {r["init_digest"] for r in rows} == {read_weights_file(out / "initial-weights.npz").digest}
    sentence = (out / "summary.md").read_text().splitlines()[-1]
    assert "agree within" in sentence and " differs by " not in sentence, sentence
    assert "Same start:" in done.stdout
