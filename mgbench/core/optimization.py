"""How a model's weights are stepped: the optimizer with its hyperparameters, and the learning-rate schedule.

A model declares its `Optimization` in the catalogue (`ModelSpec.optimization`). Every framework
maps the declared optimizer onto its own class in one place (`build_optimizer` in its package,
keyed by the optimizer's `kind`), stepping as torch's does, and declares the kinds it builds
(`Capabilities.optimizers`): a run of a model whose optimizer a framework cannot build is an
`unsupported` row decided before launching. The schedule is the driver's alone: it sets each
step's rate from `Schedule.rate_at` through `Adapter.set_learning_rate`, so every framework
follows the same rates, in every epoch of an `--epochs` run and, where the schedule says so
(`schedules_steps`), at every step of a `--steps` run.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, ClassVar


@dataclass(frozen=True)
class SGD:
    """SGD with momentum in torch's form (b = m b + g; w -= lr b), no dampening.

    Heavy-ball momentum unless `nesterov`, in torch's form in every framework: Keras', Gluon's and
    Chainer's own (v = m v - lr g; w += v) give the same steps only at a constant rate, and a
    schedule changes it every step of its warm-up."""

    kind: ClassVar[str] = "sgd"
    momentum: float = 0.9
    nesterov: bool = False
    weight_decay: float = 0.0
    """Added to the gradient before the momentum, as torch, Gluon and Chainer do (Keras' SGD decays
    the weights apart). The image models' is zero."""


@dataclass(frozen=True)
class AdamW:
    """Adam with decoupled weight decay, as torch.optim.AdamW steps it (w -= lr wd w, then Adam's
    step with bias-corrected moments and `eps` added to the root of the second)."""

    kind: ClassVar[str] = "adamw"
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    weight_decay: float = 0.01


Optimizer = SGD | AdamW


@dataclass(frozen=True)
class RatePlan:
    """What a schedule reads of a run: the job's `--lr`, given for a global batch of
    `reference_batch`, the run's global batch, and its steps per epoch and in all."""

    base_lr: float
    global_batch: int
    reference_batch: int
    steps_per_epoch: int
    total_steps: int


@dataclass(frozen=True)
class LinearScalingWarmup:
    """The linear scaling rule with gradual warm-up (Goyal et al., "Accurate, Large Minibatch SGD",
    2017): when the global batch grows k-fold the rate is multiplied by k, and reached by a linear
    ramp from the unscaled rate over the first epoch(s), because the scaled rate is unstable on
    freshly initialised weights. 1-device and N-device runs of a weak-scaling compare then train
    with rates that differ exactly by the rule."""

    kind: ClassVar[str] = "linear_scaling_warmup"
    schedules_steps: ClassVar[bool] = False
    """A run timed in `--steps` trains at `--lr` throughout: its warm-up is counted in epochs,
    which a run on synthetic data has none of, and the image models' throughput figures were
    always taken at a constant rate."""
    warmup_epochs: int = 1

    def rate_at(self, step: int, plan: RatePlan) -> float:
        """The rate of training step `step` (0-based): a ramp from `--lr` to the scaled rate, then flat."""
        target = plan.base_lr * plan.global_batch / plan.reference_batch
        warmup_steps = self.warmup_epochs * plan.steps_per_epoch
        if step >= warmup_steps:
            return target
        return plan.base_lr + (target - plan.base_lr) * step / warmup_steps


@dataclass(frozen=True)
class WarmupCosine:
    """A linear warm-up to `--lr` over `warmup_steps`, then a half cosine down to `final_share` of
    it at the run's last step, as language models train with AdamW. The peak is `--lr` whatever the
    global batch: the linear scaling rule is SGD's, and Adam's steps are normalised by the
    gradients' scale. The warm-up's first step takes 1/`warmup_steps` of the peak, not 0, so no
    step is wasted at rate 0."""

    kind: ClassVar[str] = "warmup_cosine"
    schedules_steps: ClassVar[bool] = True
    """A run timed in `--steps` follows it too, over its steps: warm-up and decay are counted in
    steps, and a language model is measured at the rates it trains at."""
    warmup_steps: int
    final_share: float = 0.1

    def rate_at(self, step: int, plan: RatePlan) -> float:
        peak = plan.base_lr
        if step < self.warmup_steps:
            return peak * (step + 1) / self.warmup_steps
        progress = min(1.0, (step - self.warmup_steps) / max(1, plan.total_steps - self.warmup_steps))
        final = self.final_share * peak
        return final + (peak - final) * 0.5 * (1 + math.cos(math.pi * progress))


Schedule = LinearScalingWarmup | WarmupCosine


@dataclass(frozen=True)
class Optimization:
    optimizer: Optimizer
    schedule: Schedule
    learning_rate: float
    """The peak rate a job trains at unless `--lr` gives another."""

    def record(self) -> dict[str, dict[str, Any]]:
        """As a row records it: each part's kind and its hyperparameters."""
        return {
            part: {"kind": value.kind, **dataclasses.asdict(value)}
            for part, value in (("optimizer", self.optimizer), ("schedule", self.schedule))
        }


IMAGE_SGD = Optimization(SGD(momentum=0.9), LinearScalingWarmup(warmup_epochs=1), learning_rate=0.01)
"""The image models': heavy-ball SGD at momentum 0.9 without weight decay, the linear scaling rule
with a one-epoch warm-up, at 0.01 for a global batch of 256."""
LANGUAGE_MODEL_ADAMW = Optimization(
    AdamW(betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1), WarmupCosine(warmup_steps=20), learning_rate=6e-4
)
"""GPT-2's as nanoGPT and llm.c train it: AdamW with beta2 0.95 and weight decay 0.1 (on every
weight alike, so that every framework's optimizer decays the same arrays), peak 6e-4. The warm-up
is 20 steps, a tenth of a 200-step benchmark, where GPT-2's own runs warm up over hundreds."""
