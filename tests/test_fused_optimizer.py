"""`--fused-optimizer`: torch's fused SGD where the framework declares it, the same steps as the
unfused one; elsewhere an `unsupported` row decided before launching."""

import torch

from mgbench.cli.catalog import capability_text
from mgbench.core.config import RunConfig
from mgbench.core.optimization import IMAGE_SGD, AdamW
from mgbench.frameworks.pytorch.models import build_optimizer
from mgbench.frameworks.pytorch.spec import TORCHVISION
from mgbench.frameworks.registry import framework_spec
from mgbench.frameworks.specs import Capabilities


def stepped(fused: bool) -> tuple[torch.Tensor, torch.optim.SGD]:
    torch.manual_seed(0)
    weights = torch.nn.Parameter(torch.randn(64, 32))
    directions = torch.randn(64, 32).sign()
    optimizer = build_optimizer([weights], 0.1, IMAGE_SGD.optimizer, fused=fused)
    for step in range(3):
        weights.grad = directions * (step + 1)
        optimizer.step()
    return weights.detach(), optimizer


def test_the_fused_step_moves_the_weights_as_the_unfused_one():
    fused, fused_optimizer = stepped(True)
    plain, plain_optimizer = stepped(False)
    assert fused_optimizer.defaults["fused"] is True and not plain_optimizer.defaults["fused"]
    torch.manual_seed(0)
    # torch's heavy ball: buffers 1, 2.9, 5.61 over gradients 1, 2, 3 at rate 0.1 move each weight 0.951
    torch.testing.assert_close((fused - torch.randn(64, 32)).abs(), torch.full((64, 32), 0.951))
    torch.testing.assert_close(fused, plain)


def test_only_frameworks_declaring_a_fused_step_accept_it():
    config = RunConfig.flat("pytorch", "ddp", "resnet50", 1, "cpu", 2, 2, fused_optimizer=True)
    assert framework_spec("pytorch").refusal(config) is None
    assert framework_spec("horovod").refusal(config.with_changes(framework="horovod", strategy="hvd")) is None
    refusal = framework_spec("keras-jax").refusal(config.with_changes(framework="keras-jax", strategy="jax-dp"))
    assert "no fused optimizer" in refusal


def test_a_fused_step_is_declared_and_named_per_optimizer_it_steps():
    """`list` names the fused step of each optimizer PyTorch builds, AdamW's as AdamW's; a
    framework with a fused step for AdamW only refuses one for an SGD model."""
    assert "--fused-optimizer: torch.optim.SGD(fused=True) or torch.optim.AdamW(fused=True)" in capability_text(
        framework_spec("pytorch")
    )
    assert "--fused-optimizer" not in capability_text(framework_spec("keras-jax"))
    adamw_only = Capabilities(
        TORCHVISION, optimizers=("sgd", AdamW.kind), fused_optimizers={AdamW.kind: "torch.optim.AdamW(fused=True)"}
    )
    config = RunConfig.flat("pytorch", "ddp", "resnet50", 1, "cpu", 2, 2, fused_optimizer=True)
    assert adamw_only.refusal(config) == "has no fused optimizer step for sgd here (--fused-optimizer)"
