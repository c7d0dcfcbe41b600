"""PyTorch adapter: architectures, autocast in replica threads, and data-parallel equivalence.

The DDP test runs the real path (torchrun, gloo, two processes) and checks that one step on
2 processes with global batch B leaves the same weights as one process on B, and that the
step moved the weights far more than the difference between the two.
"""

import threading

import numpy as np
import pytest
import torch
from conftest import assert_compiled_equals_eager, assert_two_devices_equal_one

from mgbench.core.config import RunConfig
from mgbench.core.models import MODELS
from mgbench.frameworks.pytorch.adapter import Autocasting, TorchAdapter, create_adapter
from mgbench.frameworks.pytorch.models import build_loss
from mgbench.frameworks.pytorch.strategies import LossComputingModule, TorchStrategy


def test_autocast_covers_a_forward_in_another_thread():
    casting = Autocasting(torch.nn.Linear(8, 4), "cpu", torch.bfloat16)
    dtypes = []
    worker = threading.Thread(target=lambda: dtypes.append(casting(torch.randn(2, 8)).dtype))
    worker.start()
    worker.join()
    assert dtypes == [torch.bfloat16]


def test_loss_inside_the_module_equals_loss_outside():
    spec = MODELS["densenet121"]
    model = torch.nn.Linear(6, spec.num_classes)
    images, targets = torch.randn(4, 6), (torch.rand(4, spec.num_classes) < 0.2).float()
    criterion = build_loss(spec)
    inside = LossComputingModule(model, criterion)(images, targets)
    assert inside.shape == (1,)
    assert inside.item() == pytest.approx(criterion(model(images), targets).item())


def losses_in_process(strategy, steps=3, parallel=None, **changes):
    """Losses of `steps` steps in this process; `parallel` overrides the strategy object."""
    config = RunConfig.flat(
        **{
            **dict(
                framework="pytorch",
                strategy=strategy,
                model="tiny",
                devices=1,
                device_kind="cpu",
                batch_per_device=8,
                steps=steps,
                learning_rate=0.1,
            ),
            **changes,
        }
    )
    adapter = TorchAdapter(strategy, parallel) if parallel else create_adapter(strategy)
    adapter.setup(config)
    batches = adapter.batches()
    losses = []
    for _ in range(steps):
        adapter.train_step(next(batches))
        losses.append(adapter.last_loss())
    adapter.close()
    return losses


def test_dp_and_dp_loss_follow_the_single_device_losses_on_cpu():
    reference = losses_in_process("dp")
    assert reference[0] > reference[-1]  # it trains
    assert losses_in_process("dp-loss") == pytest.approx(reference, rel=1e-6)


def test_bf16_autocast_trains_on_cpu():
    losses = losses_in_process("dp", precision="bf16", data_format="channels_last")
    assert all(np.isfinite(losses))


@pytest.mark.slow
def test_ddp_two_processes_equal_one_process_on_the_same_global_batch(tmp_path):
    assert_two_devices_equal_one(tmp_path, "pytorch", "ddp", 1e-6)


@pytest.mark.slow
def test_a_compiled_step_gives_the_eager_losses_in_one_process():
    """torch.compile of the module one process steps (what Horovod's processes step too)."""
    eager = losses_in_process("one-process", parallel=TorchStrategy())
    assert losses_in_process("one-process", parallel=TorchStrategy(), compile="default") == pytest.approx(
        eager, rel=1e-5
    )


@pytest.mark.slow
def test_compiled_ddp_on_two_processes_trains_as_eager(tmp_path):
    """torch.compile of the DDP module (graph split at its buckets) on 2 gloo processes."""
    row = assert_compiled_equals_eager(tmp_path, "pytorch", "ddp", 2, 4, 1e-5)
    assert row.compiler == "torch.compile (default)"
