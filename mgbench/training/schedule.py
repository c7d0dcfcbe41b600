"""Learning rate for training in epochs: the linear scaling rule with gradual warm-up.

Goyal et al., "Accurate, Large Minibatch SGD" (2017): when the global batch grows k-fold,
multiply the learning rate by k, and reach that rate by a linear ramp from the unscaled rate
over the first epoch(s), because the scaled rate is unstable on freshly initialised weights.
`--lr` is the rate for a global batch of `lr_reference_batch`, so 1-device and N-device runs
of a weak-scaling compare train with rates that differ exactly by the rule.
"""

from __future__ import annotations

WARMUP_EPOCHS = 1


def scaled_learning_rate(base_lr: float, global_batch: int, reference_batch: int) -> float:
    return base_lr * global_batch / reference_batch


def learning_rate_at(step: int, steps_per_epoch: int, base_lr: float, global_batch: int, reference_batch: int) -> float:
    """Rate for training step `step` (0-based): a ramp from `base_lr` to the scaled rate, then flat."""
    target = scaled_learning_rate(base_lr, global_batch, reference_batch)
    warmup_steps = WARMUP_EPOCHS * steps_per_epoch
    if step >= warmup_steps:
        return target
    return base_lr + (target - base_lr) * step / warmup_steps
