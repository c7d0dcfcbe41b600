"""The job's SGD with momentum in torch's form, on Gluon's own fused update kernels.

torch steps b = m b + g; w -= lr b (Nesterov: w -= lr (g + m b)), g including the weight decay.
MXNet's `sgd_mom_update` and `nag_mom_update` keep a velocity with the rate inside,
v = m v - lr g; w += v (Nesterov: w += m v - lr g): the same steps while the rate holds, other
steps once it changes, and the job's warm-up changes it every step (`mgbench.core.optimization`).
Their velocity is torch's buffer times -lr, so scaling it by new rate / old rate whenever the
rate changes makes each kernel step exactly as torch does. That keeps one fused kernel per
tensor and step (two while the rate moves), where torch's form written as NDArray arithmetic
would launch several per tensor, on every device.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mxnet as mx

from mgbench.core.optimization import SGD, Optimizer


def heavy_ball_step(weight: mx.nd.NDArray, grad: mx.nd.NDArray, velocity: mx.nd.NDArray, **settings: float) -> None:
    mx.nd.sgd_mom_update(weight, grad, velocity, out=weight, **settings)


def nesterov_step(weight: mx.nd.NDArray, grad: mx.nd.NDArray, velocity: mx.nd.NDArray, **settings: float) -> None:
    """Not in place: `nag_mom_update` reads the weight for the velocity's decay term after it has
    written the step's output, so `out=weight` would decay the velocity by the new weight."""
    weight[:] = mx.nd.nag_mom_update(weight, grad, velocity, **settings)


class TorchFormSGD(mx.optimizer.Optimizer):
    """SGD with momentum that steps as torch.optim.SGD (no dampening) under a changing rate.

    A rate that rises from 0 has no velocity to scale (the buffer was kept at rate 0), and fails
    with ZeroDivisionError rather than step otherwise than torch."""

    def __init__(self, momentum: float, nesterov: bool, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.momentum = momentum
        self.step = nesterov_step if nesterov else heavy_ball_step

    @classmethod
    def for_job(cls, declared: SGD, learning_rate: float) -> TorchFormSGD:
        return cls(declared.momentum, declared.nesterov, learning_rate=learning_rate, wd=declared.weight_decay)

    def create_state(self, index: int, weight: mx.nd.NDArray) -> tuple[mx.nd.NDArray, list[float]]:
        """The kernel's velocity and the rate it is held at (each device's updater has its own)."""
        return mx.nd.zeros(weight.shape, weight.context, dtype=weight.dtype), [self._get_lr(index)]

    def update(
        self, index: int, weight: mx.nd.NDArray, grad: mx.nd.NDArray, state: tuple[mx.nd.NDArray, list[float]]
    ) -> None:
        self._update_count(index)
        rate, (velocity, held) = self._get_lr(index), state
        if rate != held[0]:
            velocity *= rate / held[0]
            held[0] = rate
        self.step(
            weight,
            grad,
            velocity,
            lr=rate,
            wd=self._get_wd(index),
            momentum=self.momentum,
            rescale_grad=self.rescale_grad,
        )


OPTIMIZERS: dict[str, Callable[[Any, float], mx.optimizer.Optimizer]] = {SGD.kind: TorchFormSGD.for_job}
"""Gluon's optimizer for each declared kind stepping as torch's does: the kinds `spec.py` declares
it builds (`Capabilities.optimizers`)."""


def build_optimizer(declared: Optimizer, learning_rate: float) -> mx.optimizer.Optimizer:
    """The model's declared optimizer (`ModelSpec.optimization`) starting at `learning_rate`."""
    return OPTIMIZERS[declared.kind](declared, learning_rate)
