"""Warm-up detection and steady-state statistics on series with a known answer."""

import numpy as np
import pytest

from mgbench.measure.timing import detect_warmup, first_step_kept, summarise_steps


def noisy(values, relative=0.01, seed=0):
    rng = np.random.default_rng(seed)
    values = np.asarray(values, dtype=float)
    return values * (1 + rng.uniform(-relative, relative, size=len(values)))


def test_slow_first_steps_are_the_warmup():
    series = noisy([2.0, 0.5, 0.3] + [0.1] * 40)
    warmup = detect_warmup(series)
    assert (warmup.steps, warmup.detected) == (3, True)


def test_no_warmup_when_flat():
    assert detect_warmup(noisy([0.1] * 40)).steps == 0


def test_gradual_decay_ends_where_steps_enter_tolerance():
    decay = [0.2 - 0.01 * i for i in range(10)]  # 0.20 ... 0.11, all more than 5% above 0.1
    warmup = detect_warmup(decay + [0.1] * 40)
    assert (warmup.steps, warmup.detected) == (10, True)


def test_single_spike_in_steady_state_does_not_extend_warmup():
    series = [2.0, 0.5, 0.3] + [0.1] * 40
    series[30] = 1.0
    assert detect_warmup(series).steps == 3


def test_noisy_flat_cpu_series_is_steady():
    rng = np.random.default_rng(1)
    series = [3.0] + list(0.1 * rng.lognormal(0, 0.15, size=60))
    warmup = detect_warmup(series)
    assert warmup.detected
    assert 1 <= warmup.steps <= 5


def test_series_that_never_settles_is_reported_as_such():
    warmup = detect_warmup(list(np.linspace(0.1, 0.4, 40)))
    assert (warmup.steps, warmup.detected) == (1, False)


def test_periodic_bursts_of_slow_steps_are_steady_state():
    """DenseNet-121 on 4 GPUs: 5 steps of 63 ms every 13 steps of 56 ms, after 2 start-up steps."""
    bursts = ([0.056] * 13 + [0.063] * 5) * 6
    warmup = detect_warmup(noisy([6.7, 0.095] + bursts, relative=0.005))
    assert (warmup.steps, warmup.detected) == (2, True)


def test_step_change_late_in_the_run_is_drift():
    warmup = detect_warmup(noisy([0.1] * 30 + [0.12] * 10))
    assert not warmup.detected


def test_too_few_steps_excludes_only_the_first():
    warmup = detect_warmup([1.0, 0.1, 0.1, 0.1])
    assert (warmup.steps, warmup.detected) == (1, False)


@pytest.mark.parametrize("steps, kept", [(1, True), (2, False), (9, False), (20, False)])
def test_only_a_one_step_run_keeps_its_first_step_and_says_so(steps, kept):
    stats = summarise_steps([1.0] + [0.1] * (steps - 1), [0.0] * steps, 32)
    assert first_step_kept(stats.warmup_steps, stats.warmup_detected) is kept
    assert stats.samples_per_sec == pytest.approx(32.0 if kept else 320.0)


def test_summary_figures():
    steady = [0.1] * 10 + [0.104, 0.096] * 5
    steps = [1.0, 0.5] + steady
    waits = [0.0, 0.0] + [0.01] * 10 + [0.02] * 10
    stats = summarise_steps(steps, waits, global_batch=64)
    assert stats.warmup_steps == 2
    assert stats.warmup_seconds == pytest.approx(1.5)
    assert stats.steady_steps == 20
    assert stats.window_seconds == pytest.approx(sum(steady))
    assert stats.samples_per_sec == pytest.approx(64 * 20 / sum(steady))
    assert stats.samples_per_sec_p10 == pytest.approx(64 / 0.104)
    assert stats.samples_per_sec_p90 == pytest.approx(64 / 0.096)
    assert stats.input_wait_fraction == pytest.approx(0.3 / sum(steady))
    assert stats.train_seconds == pytest.approx(sum(steps))


def test_summary_rejects_mismatched_series():
    with pytest.raises(ValueError):
        summarise_steps([0.1, 0.1], [0.0], global_batch=1)


def epochs_series(stall_at: int, stall: float = 2.76, steps: int = 40, seed: int = 2) -> list[float]:
    """Two epochs of a 4-GPU run: 3 warm-up steps, then steps of 43 ms with one stall of `stall`
    seconds at step `stall_at` (the second epoch's first step, its loader restarting)."""
    series = list(noisy([1.5, 0.4, 0.1] + [0.043] * (steps - 3), relative=0.01, seed=seed))
    series[stall_at] = stall
    return series


@pytest.mark.parametrize("stall_at", [8, 20, 33], ids=["first-half", "epoch-boundary", "last-quarter"])
def test_a_stall_is_counted_as_a_stall_wherever_it_falls_never_as_warmup_nor_in_the_window(stall_at):
    series = epochs_series(stall_at)
    stats = summarise_steps(series, [0.0] * len(series), 256)
    assert (stats.warmup_steps, stats.warmup_detected) == (3, True)
    assert (stats.stall_steps, stats.stall_seconds) == (1, pytest.approx(2.76))
    steady = [s for i, s in enumerate(series) if i >= 3 and i != stall_at]
    assert stats.samples_per_sec == pytest.approx(256 * len(steady) / sum(steady))
    assert stats.samples_per_sec_p10 <= stats.samples_per_sec <= stats.samples_per_sec_p90
    assert stats.warmup_seconds + stats.stall_seconds + stats.window_seconds == pytest.approx(stats.train_seconds)


def test_a_dip_of_slow_steps_after_the_steady_state_began_is_not_warmup():
    """An epoch boundary where the loader's restart slows a few steps: the steady state had begun,
    so the steps before the dip are steady, not warm-up (as they would be were warm-up where the
    series last left its band)."""
    series = epochs_series(20, stall=0.043)
    series[20:23] = [0.3, 0.2, 0.06]
    stats = summarise_steps(series, [0.0] * len(series), 256)
    assert stats.warmup_steps == 3 and stats.stall_steps == 2  # 0.3 and 0.2 s: more than twice 43 ms
    assert stats.steady_steps == len(series) - 5


def test_slow_steps_that_recur_are_the_steady_state_not_stalls():
    """One step in three at four times the others: how the job runs (a sync every third step)."""
    series = [1.0, 1.0, 1.0] + [0.1, 0.1, 0.4] * 8
    stats = summarise_steps(series, [0.0] * len(series), 16)
    assert stats.stall_steps == 0 and stats.steady_steps == 24
    assert stats.samples_per_sec == pytest.approx(16 * 24 / (8 * 0.6))


def test_the_interval_is_the_slowest_and_fastest_third_of_the_window():
    steady = [0.1] * 10 + [0.11] * 10 + [0.09] * 10
    stats = summarise_steps([1.0] + steady, [0.0] * 31, 10)
    assert stats.samples_per_sec_low == pytest.approx(100 / 1.1)
    assert stats.samples_per_sec_high == pytest.approx(100 / 0.9)
    assert stats.samples_per_sec_low < stats.samples_per_sec < stats.samples_per_sec_high
    one = summarise_steps([0.5], [0.0], 10)
    assert one.samples_per_sec_low == one.samples_per_sec == one.samples_per_sec_high == pytest.approx(20)
