"""`mgbench convert-weights`: a torchvision state dict becomes the `.npz` every framework starts from."""

import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch
import torchvision
from conftest import mgbench, one_line_error

from mgbench.common.initial_weights import read_weights_file, reference_weights
from mgbench.common.models import model_spec


def test_published_densenet_names_and_a_ddp_checkpoint_convert_with_a_new_head(tmp_path: Path) -> None:
    """torchvision's published DenseNet weights say `norm.1` for `norm1`; ImageNet's 1000-way head
    is drawn anew for CheXNet's 14 outputs; every other array is the file's."""
    state = torchvision.models.densenet121(weights=None).state_dict()
    legacy = {re.sub(r"(denselayer\d+\.(?:norm|relu|conv))([12])\.", r"\1.\2.", k): v for k, v in state.items()}
    assert legacy.keys() != state.keys()
    torch.save({"state_dict": {f"module.{k}": v for k, v in legacy.items()}}, tmp_path / "imagenet.pth")
    done = mgbench("convert-weights", str(tmp_path / "imagenet.pth"), str(tmp_path / "start.npz"))
    assert done.returncode == 0, done.stderr
    converted = read_weights_file(tmp_path / "start.npz").arrays
    spec = model_spec("densenet121")
    assert set(converted) == set(reference_weights(spec, 0, spec.image_size).arrays)
    np.testing.assert_array_equal(converted["features.denseblock2.denselayer3.norm2.weight"],
                                  state["features.denseblock2.denselayer3.norm2.weight"].numpy())  # fmt: skip
    assert converted["classifier.weight"].shape == (spec.num_classes, 1024)
    assert "classifier.weight, classifier.bias" in done.stderr
    again = mgbench("convert-weights", str(tmp_path / "imagenet.pth"), str(tmp_path / "start.npz"))
    assert again.returncode == 2 and "not overwritten" in one_line_error(again)


def test_weights_of_another_model_or_no_state_dict_are_one_line(tmp_path: Path) -> None:
    torch.save(torchvision.models.resnet50(weights=None).state_dict(), tmp_path / "resnet.pth")
    wrong = mgbench("convert-weights", str(tmp_path / "resnet.pth"), str(tmp_path / "a.npz"), "--model", "densenet121")
    assert wrong.returncode == 2 and "is not densenet121's weights" in one_line_error(wrong)
    torch.save([1, 2], tmp_path / "list.pth")
    junk = mgbench("convert-weights", str(tmp_path / "list.pth"), str(tmp_path / "b.npz"))
    assert junk.returncode == 2 and "not a torch state dict" in one_line_error(junk)
    assert not (tmp_path / "a.npz").exists() and not (tmp_path / "b.npz").exists()


STEPS_AGREED = 3
"""The first SGD steps whose losses every framework must give as pytorch does (fp32, 1e-3)."""


@pytest.mark.slow
def test_a_converted_densenet_starts_every_framework_and_their_first_steps_agree(tmp_path: Path) -> None:
    """A torchvision DenseNet-121 state dict, converted, starts every installed framework (one
    digest on every row) and each takes pytorch's first three SGD steps from it within 1e-3; the
    console's same-start line says so. Frameworks not installed are left out by compare."""
    torch.manual_seed(1)
    torch.save(torchvision.models.densenet121(weights=None, num_classes=14).state_dict(), tmp_path / "dn.pth")
    converted = mgbench("convert-weights", str(tmp_path / "dn.pth"), str(tmp_path / "dn.npz"))
    assert converted.returncode == 0, converted.stderr
    out = tmp_path / "run"
    done = mgbench(
        "compare", "--frameworks", "pytorch,horovod,keras,tensorflow,gluon,chainer", "--gpus", "1",
        "--model", "densenet121", "--precision", "fp32", "--batch-per-gpu", "2", "--steps", str(STEPS_AGREED),
        "--image-size", "64", "--init", str(tmp_path / "dn.npz"), "--out", str(out), timeout=1800,
    )  # fmt: skip
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    ok = [row for row in rows if row["status"] == "ok"]
    assert len(ok) >= 2 and ok[0]["framework"] == "pytorch", done.stdout + done.stderr
    assert {row["init_digest"] for row in ok} == {read_weights_file(tmp_path / "dn.npz").digest}
    reference = ok[0]["step_losses"][:STEPS_AGREED]
    for row in ok:
        assert len(row["step_losses"]) >= STEPS_AGREED  # a compiled step (keras-jax) adds its compile step first
        np.testing.assert_allclose(row["step_losses"][:STEPS_AGREED], reference, rtol=1e-3, err_msg=row["run_id"])
    assert "Same start: the first-step losses of" in done.stdout and " differs by " not in done.stdout
