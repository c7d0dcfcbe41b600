"""The attention kernel a PyTorch row names is the one SDPA ran, observed on the run's tensors."""

import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from mgbench.core.models import model_spec
from mgbench.frameworks.pytorch.attention import UNFUSED, attention_kernel, sdpa_backend

VIT = model_spec("vit_b_16")


def qkv(dtype: torch.dtype = torch.float32) -> list[torch.Tensor]:
    return [torch.randn(2, 4, 17, 64, dtype=dtype, requires_grad=True) for _ in range(3)]


def test_a_model_without_attention_names_none():
    assert attention_kernel(model_spec("resnet50"), 64, 2, torch.device("cpu"), torch.float32) is None


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_cpu_flash_kernel_is_named_where_sdpa_picks_it(dtype):
    assert sdpa_backend(*qkv(dtype)) == "torch SDPA: flash (CPU)"
    assert attention_kernel(VIT, 64, 2, torch.device("cpu"), dtype) == "torch SDPA: flash (CPU)"


def test_the_unfused_path_is_named_math_when_only_math_is_allowed():
    with sdpa_kernel([SDPBackend.MATH]):
        assert sdpa_backend(*qkv()) == f"torch SDPA: {UNFUSED}"


def test_the_summary_shows_the_attention_kernel_only_where_a_row_names_one():
    from mgbench.core.config import RunConfig
    from mgbench.records.results import RunResult
    from mgbench.reports.summary import display_table, results_frame

    def row(model: str, kernel: str | None) -> RunResult:
        config = RunConfig.flat("pytorch", "ddp", model, 1, "cpu", 2, 2)
        return RunResult.flat(config, "ok", samples_per_sec=10.0, attention_kernel=kernel)

    with_vit = display_table(results_frame([row("vit_b_16", "torch SDPA: flash (CPU)"), row("tiny", None)]))
    assert with_vit["attention"].tolist() == ["torch SDPA: flash (CPU)", ""]
    assert "attention" not in display_table(results_frame([row("tiny", None)]))
