"""A CPU compare of ViT-B/16 gives ok rows for PyTorch and every Keras backend, each with the
reference parameter count at the size trained, from one start, each naming its attention kernel."""

from pathlib import Path

import pytest
from conftest import mgbench, read_rows

from mgbench.core.models import model_spec

SIZE = 64


@pytest.mark.slow
def test_vit_trains_in_pytorch_and_every_keras_backend_with_one_parameter_count(tmp_path: Path) -> None:
    done = mgbench(
        "compare", "--frameworks", "pytorch,keras", "--model", "vit_b_16", "--image-size", str(SIZE),
        "--steps", "2", "--batch-per-gpu", "2", "--gpus", "1", "--profile", "0", "--out", str(tmp_path / "vit"),
        timeout=1500,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "vit_b_16 fp32 any layout (a transformer)" in done.stdout
    rows = read_rows(tmp_path / "vit").set_index("framework")
    assert set(rows.index) == {"pytorch", "keras-tf", "keras-jax", "keras-torch"}
    assert (rows["status"] == "ok").all(), rows[["status", "error"]]
    assert (rows["parameters"] == model_spec("vit_b_16").parameters_at(SIZE)).all()
    assert rows["init_digest"].nunique() == 1
    assert rows.loc["pytorch", "attention_kernel"].startswith("torch SDPA: ")
    assert rows.loc["keras-torch", "attention_kernel"].startswith("torch SDPA: ")
    assert "XLA" in rows.loc["keras-jax", "attention_kernel"]
    assert "einsum" in rows.loc["keras-tf", "attention_kernel"]
    assert all(not unmatched for unmatched in rows["unmatched"])
