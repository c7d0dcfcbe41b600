"""SGD with momentum stepping as torch.optim.SGD does, for Chainer.

Chainer's `MomentumSGD` keeps the rate inside the velocity (v = m v - lr g; w += v). torch keeps
it out (b = m b + g; w -= lr b). The two give the same steps only while the rate is constant; the
job changes it every step of its warm-up (`mgbench.core.optimization`), down as well as up, after
which Chainer's form would have stepped by other amounts and its run would drift from every other
framework's. `TorchFormSGD` steps in torch's form instead, with the rest of torch's SGD that
`core.optimization.SGD` declares (Nesterov, weight decay added to the gradient before the momentum).

The update is written once on the parameter's own array module, so the same code runs on numpy
and on CuPy, and under ChainerMN's multi-node optimizer, which averages the gradients and then
calls this optimizer's `update`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mgbench.core.optimization import SGD, Optimizer
from mgbench.frameworks.chainer.imports import chainer, optimizer


class TorchFormRule(optimizer.UpdateRule):
    """One parameter's step: b = m b + (g + wd w); w -= lr b, or lr ((g + wd w) + m b) with
    Nesterov. The buffer starts at zero, so the first step sets it to the gradient as torch does."""

    is_elementwise = True

    def init_state(self, param: chainer.Parameter) -> None:
        with chainer.using_device(param.device):
            self.state["momentum_buffer"] = param.device.xp.zeros_like(param.array)

    def update_core(self, param: chainer.Parameter) -> None:
        """Overrides `UpdateRule.update_core` itself (not its CPU and GPU halves): the arithmetic
        is the same on numpy and CuPy arrays."""
        if param.grad is None:
            return
        hyperparam, weights = self.hyperparam, param.array
        grad = param.grad + hyperparam.weight_decay * weights if hyperparam.weight_decay else param.grad
        buffer = self.state["momentum_buffer"]
        buffer *= hyperparam.momentum
        buffer += grad
        step = grad + hyperparam.momentum * buffer if hyperparam.nesterov else buffer
        weights -= hyperparam.lr * step


class TorchFormSGD(optimizer.GradientMethod):
    """torch.optim.SGD (no dampening) as a Chainer optimizer; `lr` may be set before any update,
    as the adapter does every step, directly or through ChainerMN's wrapper."""

    lr = optimizer.HyperparameterProxy("lr")
    momentum = optimizer.HyperparameterProxy("momentum")

    def __init__(self, lr: float, momentum: float, nesterov: bool = False, weight_decay: float = 0.0):
        super().__init__()
        self.hyperparam.lr = lr
        self.hyperparam.momentum = momentum
        self.hyperparam.nesterov = nesterov
        self.hyperparam.weight_decay = weight_decay

    def create_update_rule(self) -> TorchFormRule:
        return TorchFormRule(self.hyperparam)


def sgd(learning_rate: float, declared: SGD) -> TorchFormSGD:
    return TorchFormSGD(
        learning_rate, declared.momentum, nesterov=declared.nesterov, weight_decay=declared.weight_decay
    )


OPTIMIZERS: dict[str, Callable[[float, Any], optimizer.GradientMethod]] = {SGD.kind: sgd}
"""Chainer's optimizer for each declared kind stepping as torch's does: the kinds `spec.py`
declares it builds (`Capabilities.optimizers`)."""


def build_optimizer(learning_rate: float, declared: Optimizer) -> optimizer.GradientMethod:
    """The model's declared optimizer (`ModelSpec.optimization`) starting at `learning_rate`."""
    return OPTIMIZERS[declared.kind](learning_rate, declared)
