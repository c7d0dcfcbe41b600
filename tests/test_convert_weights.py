"""`mgbench convert-weights`: a torchvision state dict becomes the `.npz` every framework starts from."""

import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
import torchvision
from conftest import mgbench, one_line_error

from mgbench.cli import convert_weights, main
from mgbench.core.initial_weights import read_weights_file, reference_weights
from mgbench.core.models import model_spec


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
"""The first SGD steps whose losses the other framework must give as pytorch does (fp32, 1e-3)."""
PAIR = "pytorch,gluon"
"""Two frameworks with their own weight loaders and builders; that every framework's build computes
pytorch's logits from one start is tests/test_same_start.py's claim, so one pair suffices here."""


@pytest.mark.slow
def test_a_converted_densenet_starts_a_compare_and_its_first_steps_agree(tmp_path: Path) -> None:
    """A torchvision DenseNet-121 state dict, converted, is a start `--init` takes: both frameworks
    of a compare start from it (its digest on every row) and take pytorch's first three SGD steps
    from it within 1e-3; the console's same-start line says so."""
    torch.manual_seed(1)
    torch.save(torchvision.models.densenet121(weights=None, num_classes=14).state_dict(), tmp_path / "dn.pth")
    converted = mgbench("convert-weights", str(tmp_path / "dn.pth"), str(tmp_path / "dn.npz"))
    assert converted.returncode == 0, converted.stderr
    out = tmp_path / "run"
    done = mgbench(
        "compare", "--frameworks", PAIR, "--gpus", "1", "--model", "densenet121", "--precision", "fp32",
        "--batch-per-gpu", "2", "--steps", str(STEPS_AGREED), "--image-size", "64",
        "--init", str(tmp_path / "dn.npz"), "--out", str(out), timeout=900,
    )  # fmt: skip
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [(row["framework"], row["status"]) for row in rows] == [
        (framework, "ok") for framework in PAIR.split(",")
    ], done.stdout + done.stderr
    assert {row["init_digest"] for row in rows} == {read_weights_file(tmp_path / "dn.npz").digest}
    reference = rows[0]["step_losses"]
    assert len(reference) == STEPS_AGREED
    np.testing.assert_allclose(rows[1]["step_losses"], reference, rtol=1e-3, err_msg=rows[1]["run_id"])
    assert "Same start: the first-step losses of" in done.stdout and " differs by " not in done.stdout


def converted_in_process(capsys: pytest.CaptureFixture, *args: str) -> subprocess.CompletedProcess:
    """`mgbench convert-weights ARGS` in this process (torch is imported already)."""
    code = main(["convert-weights", *args])
    captured = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, captured.out, captured.err)


def tiny_state() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2))
    model.append(torch.nn.Conv2d(16, 32, 3))
    model.extend([torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(32, 14)])
    return model.state_dict()


@pytest.mark.parametrize(
    "saved, message",
    [
        ({1: torch.zeros(3)}, "not a torch state dict (1 is no name of a tensor)"),
        ({"0.weight": torch.zeros(3, device="meta")}, "0.weight is a meta tensor (a shape without data), not a plain"),
        ({"0.weight": torch.zeros(3, 3).to_sparse()}, "0.weight is a torch.sparse_coo tensor, not a plain tensor"),
        ({"0.weight": torch.quantize_per_tensor(torch.zeros(3), 0.1, 0, torch.quint8)}, "0.weight is a quantized"),
        ({"0.weight": torch.zeros(3, dtype=torch.complex64)}, "0.weight is a complex tensor, not a plain tensor"),
        ({}, "not a torch state dict (no named tensors in it)"),
        (b"", "not a torch state dict (EOFError)"),
    ],
    ids=["int-keys", "meta", "sparse", "quantized", "complex", "empty-dict", "zero-bytes"],
)
def test_a_pth_torch_loads_but_that_holds_no_plain_weights_is_one_line(tmp_path, capsys, saved, message):
    src = tmp_path / "odd.pth"
    src.write_bytes(saved) if isinstance(saved, bytes) else torch.save(saved, src)
    done = converted_in_process(capsys, str(src), str(tmp_path / "w.npz"), "--model", "tiny")
    assert message in one_line_error(done) and not (tmp_path / "w.npz").exists()


def test_a_dict_of_parameters_converts_as_its_state_dict(tmp_path, capsys):
    """`dict(model.named_parameters())`: tensors that require gradients, read as their values."""
    state = tiny_state()
    parameters = {name: torch.nn.Parameter(tensor) for name, tensor in state.items()}
    torch.save(parameters, tmp_path / "params.pth")
    done = converted_in_process(capsys, str(tmp_path / "params.pth"), str(tmp_path / "w.npz"), "--model", "tiny")
    assert done.returncode == 0, done.stderr
    np.testing.assert_array_equal(read_weights_file(tmp_path / "w.npz").arrays["3.weight"], state["3.weight"].numpy())


def test_a_dst_made_while_converting_is_not_overwritten(tmp_path, capsys, monkeypatch):
    """A second conversion into the same new name, finishing first: its file stays, this one is one line."""
    torch.save(tiny_state(), tmp_path / "tiny.pth")
    dst = tmp_path / "w.npz"
    convert = convert_weights.conformed

    def meanwhile(*args, **kwargs):
        dst.write_text("the other conversion's")
        return convert(*args, **kwargs)

    monkeypatch.setattr(convert_weights, "conformed", meanwhile)
    done = converted_in_process(capsys, str(tmp_path / "tiny.pth"), str(dst), "--model", "tiny")
    assert "w.npz was made while the weights were converted: it is not overwritten" in one_line_error(done)
    assert dst.read_text() == "the other conversion's" and sorted(p.name for p in tmp_path.iterdir()) == [
        "tiny.pth",
        "w.npz",
    ]
