"""The shared driver on the fake adapter: timing, warm-up, input wait and the result row."""

import time
from pathlib import Path

import fakefw
import numpy as np
import pytest

from mgbench.core.config import RunConfig
from mgbench.measure.step_timer import FORCE_SYNC_ENV, StepTimer
from mgbench.measure.timing import HOST_PHASES, detect_warmup
from mgbench.training import compile_cache
from mgbench.training.driver import run_training
from mgbench.training.protocol import Adapter, ModelInfo, Placement


def fake_config(**changes):
    base = dict(
        framework="fake", strategy="steady", model="tiny", devices=2, device_kind="cpu", batch_per_device=8, steps=30
    )
    return RunConfig.flat(**{**base, **changes})


def test_fake_trainer_is_an_adapter(fake_plugin):
    import fakefw

    assert isinstance(fakefw.create_adapter("steady"), Adapter)


def test_driver_measures_warmup_input_wait_and_throughput(fake_plugin, tmp_path):
    import fakefw

    config = fake_config()
    result = run_training(fakefw.create_adapter("steady"), config, tmp_path / "state.npz")
    assert result.status == "ok"
    assert len(result.series.step_seconds) == len(result.series.input_wait_seconds) == len(result.series.losses) == 30
    # The fake's slow first steps are left out of the steady state. Exactly where warm-up ends
    # on a given series is `detect_warmup`'s (test_timing); here the series is real time on a
    # shared machine, where a stall of the OS may lengthen a few more steps, which the detector
    # then rightly leaves out too.
    assert result.timing.warmup_detected and fakefw.WARMUP_STEPS <= result.timing.warmup_steps <= config.job.steps // 2
    assert result.timing.warmup_steps == detect_warmup(result.series.step_seconds).steps
    expected_step = fakefw.STEP_SECONDS + fakefw.INPUT_SECONDS
    assert result.timing.median_step_seconds == pytest.approx(expected_step, rel=0.3)
    steady = result.series.step_seconds[result.timing.warmup_steps :]
    assert result.window_seconds == pytest.approx(sum(steady))
    assert result.timing.samples_per_sec == pytest.approx(config.global_batch * len(steady) / sum(steady))
    assert result.timing_method == "per-step sync"
    # The fake's steps run synchronously on the host, as CPU steps do: the host timing says the
    # step is its sleep and the input wait its batch's.
    assert set(result.host_breakdown) == set(HOST_PHASES)
    assert sum(result.host_breakdown.values()) == pytest.approx(1.0)
    assert result.host_breakdown["input_wait"] == pytest.approx(fakefw.INPUT_SECONDS / expected_step, rel=0.4)
    assert result.host_breakdown["step"] == pytest.approx(fakefw.STEP_SECONDS / expected_step, rel=0.4)
    assert result.input.input_wait_fraction == pytest.approx(fakefw.INPUT_SECONDS / expected_step, rel=0.4)
    assert all(w < s for w, s in zip(result.series.input_wait_seconds, result.series.step_seconds))
    assert result.startup_seconds > 0 and result.eval_metrics == {"loss": 0.5}
    assert result.build.parameters == 1234 and result.origin.framework_versions == {"fake": "1.0"}
    assert result.input.loader_workers is None
    assert np.load(tmp_path / "state.npz")["steps"][0] == 30


def test_crash_inside_a_step_propagates(fake_plugin):
    import fakefw

    with pytest.raises(RuntimeError, match="on purpose"):
        run_training(fakefw.create_adapter("crash"), fake_config(strategy="crash"))


class EpochAdapter(fakefw.FakeAdapter):
    """The fake adapter with a real-data loader's surface: 3 steps per epoch, the held-out
    splits scored apart (each with its own metrics and a known scoring time)."""

    STEPS_PER_EPOCH = 3
    VALIDATION_SECONDS = 0.05

    def steps_per_epoch(self) -> int:
        return self.STEPS_PER_EPOCH

    def epoch_batches(self, epoch: int):
        return iter(range(self.STEPS_PER_EPOCH))

    def set_learning_rate(self, learning_rate: float) -> None:
        self.learning_rate = learning_rate

    def evaluate(self, split: str = "val") -> dict[str, float]:
        self.scored = [*getattr(self, "scored", []), split]
        time.sleep(self.VALIDATION_SECONDS)
        return {"loss": 0.25, "auc": 0.75, "top1": 0.5} if split == "val" else {"loss": 0.3, "auc": 0.8}


def test_epochs_validate_each_epoch_then_test_once_and_time_the_training(fake_plugin):
    config = fake_config(dataset="chestxray:/data", epochs=2, workers=2)
    adapter = EpochAdapter("steady")
    result = run_training(adapter, config, loader="fake.Loader")
    assert adapter.scored == ["val", "val", "test"]
    assert result.by_epoch.test_metrics == {"loss": 0.3, "auc": 0.8}
    assert result.eval_metrics == {"loss": 0.25, "auc": 0.75, "top1": 0.5}
    assert result.input.loader == "fake.Loader" and result.input.loader_workers == 2
    assert [row["epoch"] for row in result.by_epoch.epoch_metrics] == [1, 2]
    for row in result.by_epoch.epoch_metrics:
        assert (row["val_loss"], row["val_auc"], row["val_top1"]) == (0.25, 0.75, 0.5)
        assert row["samples_per_sec"] == pytest.approx(3 * config.global_batch / row["train_seconds"])
        assert row["val_seconds"] >= EpochAdapter.VALIDATION_SECONDS
    spent = sum(row["train_seconds"] + row["val_seconds"] for row in result.by_epoch.epoch_metrics)
    # from the first step to the end of the last validation, not the test split's scoring after it
    assert spent <= result.by_epoch.time_to_train_seconds < spent + EpochAdapter.VALIDATION_SECONDS


class CompilingEpochs(EpochAdapter):
    """EpochAdapter compiled into a JAX-style cache folder: its compile step keeps its step there
    unless an earlier run kept it, and each validation and test scoring keeps a graph of its own
    there afterwards (a new one every run). Its steps, its scorings and every listing of a cache
    folder go in `log`, in order."""

    def __init__(self, cache: Path, log: list[str], rank: int = 0):
        super().__init__("steady")
        self.cache, self.log, self.rank = cache, log, rank

    @property
    def placement(self) -> Placement:
        return Placement(rank=self.rank, world_size=2, device_names=["fake"])

    def train_step(self, batch) -> None:
        if self.steps_done == 0 and not (self.cache / "jit_train_step-cache").exists():
            self.cache.mkdir(exist_ok=True)
            (self.cache / "jit_train_step-cache").write_bytes(b"compiled")
        self.log.append("step")
        super().train_step(batch)

    def evaluate(self, split: str = "val") -> dict[str, float]:
        metrics = super().evaluate(split)
        (self.cache / f"jit_{split}-{id(self)}-{len(self.log)}-cache").write_bytes(b"compiled")
        self.log.append(split)
        return metrics


def test_the_compile_caches_are_listed_outside_the_timed_epochs_and_still_tell_cold_from_warm(
    fake_plugin, tmp_path, monkeypatch
):
    """The primary process lists the caches once before the compile step and once after the test
    split is scored, never between its steps or inside the time to train; the first run compiled
    its step (cold), the second read it (warm), although each run's scorings kept new graphs after
    its compile step. Another rank lists nothing."""
    cache, log = tmp_path / "jax", []
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(cache))
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    listed = compile_cache._entries
    monkeypatch.setattr(compile_cache, "_entries", lambda folder: log.append("walk") or listed(folder))
    config = fake_config(dataset="chestxray:/data", epochs=2, workers=2, compile="default")
    steps, states = 2 * EpochAdapter.STEPS_PER_EPOCH, []
    for _ in range(2):
        log.clear()
        result = run_training(CompilingEpochs(cache, log), config, compiler="fake-jit")
        assert log == ["walk", *(["step"] * EpochAdapter.STEPS_PER_EPOCH + ["val"]) * 2, "test", "walk"]
        assert len(result.series.step_seconds) == steps - 1
        states.append(result.compiled.compile_cache)
    assert states == ["cold", "warm"]
    log.clear()
    assert run_training(CompilingEpochs(cache, log, rank=1), config, compiler="fake-jit") is None
    assert "walk" not in log and log.count("step") == steps


class ScriptedClock:
    """A host clock that moves only when the scripted adapter says time passed."""

    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class DeviceEvents(StepTimer):
    """A stand-in for device-side events: each mark is stamped with the adapter's device time."""

    method = "device events"

    def __init__(self, adapter):
        super().__init__(lambda: None, adapter.clock)
        self.adapter = adapter

    def start(self):
        self.marks = [self.adapter.device_time]

    def mark(self):
        self.marks.append(self.adapter.device_time)


class ScriptedAdapter(Adapter):
    """Steps of known length on a scripted clock: 3 slow warm-up steps, then two steps of 0.1 s
    and one of 0.4 s, repeated (so the window's throughput differs from the median step's), each
    after 0.01 s of input wait. With `events`, the device's own time runs 0.05 s a step
    longer than the host's and is read through DeviceEvents, as CUDA events are."""

    STEPS = [1.0, 1.0, 1.0] + [0.1, 0.1, 0.4] * 8
    WAIT = 0.01

    def __init__(self, events: bool = False):
        super().__init__("steady")
        self.clock = ScriptedClock()
        self.events = events
        self.device_time = 0.0
        self.done = 0
        self.sync_calls_at = []
        self.step_ends = []
        self.losses_read = []
        self.last_loss_calls = 0

    def setup(self, config):
        self.accept(config)
        return ModelInfo(parameters=1)

    def batches(self):
        while True:
            self.clock.now += self.WAIT
            yield self.done

    def train_step(self, batch):
        self.clock.now += self.STEPS[self.done]
        self.device_time += self.STEPS[self.done] + 0.05
        self.done += 1
        self.step_ends.append(self.clock.now)

    def synchronize(self):
        self.sync_calls_at.append(self.done)

    def last_loss(self):
        self.last_loss_calls += 1
        return 1.0 / self.done

    def pending_loss(self):
        return 1.0 / self.done if self.events else super().pending_loss()

    def read_losses(self, pending):
        self.losses_read.append(len(pending))
        return list(pending)

    def step_timer(self, clock):
        return DeviceEvents(self) if self.events else super().step_timer(clock)

    def evaluate(self, split="val"):
        return {"loss": 0.5}

    def framework_versions(self):
        return {}


def scripted_run(adapter):
    config = fake_config(devices=1, batch_per_device=16, steps=len(ScriptedAdapter.STEPS))
    return config, run_training(adapter, config, step_clock=adapter.clock)


def test_throughput_is_the_steady_windows_images_over_its_length_on_the_host_clock():
    adapter = ScriptedAdapter()
    config, result = scripted_run(adapter)
    assert result.timing.warmup_steps == 3 and result.timing_method == "per-step sync"
    # The window: from the end of the last warm-up step to the end of the last step.
    elapsed = adapter.step_ends[-1] - adapter.step_ends[2]
    steady = len(ScriptedAdapter.STEPS) - 3
    assert result.window_seconds == pytest.approx(elapsed)
    assert result.timing.samples_per_sec == pytest.approx(config.global_batch * steady / elapsed)
    assert result.timing.samples_per_sec != pytest.approx(
        config.global_batch / result.timing.median_step_seconds, rel=0.05
    )
    assert adapter.sync_calls_at.count(len(ScriptedAdapter.STEPS)) >= 1
    assert sorted(set(adapter.sync_calls_at)) == list(range(len(ScriptedAdapter.STEPS) + 1))


def test_with_device_events_no_step_waits_for_the_device_and_the_loss_is_read_once():
    adapter = ScriptedAdapter(events=True)
    config, result = scripted_run(adapter)
    steps = len(ScriptedAdapter.STEPS)
    # Synchronised before the window and once after it, never between its steps.
    assert adapter.sync_calls_at[:2] == [0, steps]
    assert adapter.last_loss_calls == 0 and adapter.losses_read == [steps]
    assert result.timing_method == "device events"
    assert result.series.step_seconds == pytest.approx([s + 0.05 for s in ScriptedAdapter.STEPS])
    assert result.timing.samples_per_sec == pytest.approx(
        16 * (steps - 3) / sum(s + 0.05 for s in ScriptedAdapter.STEPS[3:])
    )
    assert result.series.losses == pytest.approx([1.0 / n for n in range(1, steps + 1)])
    assert result.host_breakdown["synchronize"] == 0.0 and result.host_breakdown["loss_read"] == 0.0


def test_step_sync_forced_by_the_environment_synchronises_every_step(monkeypatch):
    monkeypatch.setenv(FORCE_SYNC_ENV, "1")
    adapter = ScriptedAdapter(events=True)
    _, result = scripted_run(adapter)
    assert result.timing_method == "per-step sync (forced)"
    assert sorted(set(adapter.sync_calls_at)) == list(range(len(ScriptedAdapter.STEPS) + 1))
    assert result.series.step_seconds == pytest.approx([s + ScriptedAdapter.WAIT for s in ScriptedAdapter.STEPS])


class ClosingAdapter(ScriptedAdapter):
    """Records when its feed is closed (the generator's `finally`), its evaluation and its close."""

    def __init__(self):
        super().__init__()
        self.order = []

    def batches(self):
        try:
            yield from super().batches()
        finally:
            self.order.append("feed closed")

    def evaluate(self, split="val"):
        self.order.append("evaluate")
        return super().evaluate(split)

    def close(self):
        self.order.append("close")


def test_the_driver_closes_the_feed_it_read_before_the_adapter_closes():
    adapter = ClosingAdapter()
    scripted_run(adapter)
    assert adapter.order == ["feed closed", "evaluate", "close"]


class ScriptedEpochs(ScriptedAdapter):
    """Two epochs of 12 steps on the scripted clock: 2 warm-up steps, then 0.1 s steps, the second
    epoch's first step stalled 2 s while its loader restarts (keras-jax's and pytorch's 4-GPU rows
    met such a stall at the same boundary)."""

    STEPS = [1.0, 1.0] + [0.1] * 10 + [2.0] + [0.1] * 11

    def steps_per_epoch(self):
        return 12

    def epoch_batches(self, epoch):
        return self.batches()

    def set_learning_rate(self, learning_rate):
        self.learning_rate = learning_rate

    def evaluate(self, split="val"):
        return {"loss": 0.5, "auc": 0.7}


@pytest.mark.parametrize("events", [False, True], ids=["per-step-sync", "device-events"])
def test_an_epoch_boundary_stall_is_a_stall_however_the_framework_times_its_steps(events):
    """Frameworks time their steps by synchronising after each (JAX, TensorFlow, Gluon, Chainer,
    CPU runs) or by device events (torch on GPUs); both hand the driver one time per step, and the
    one rule (`timing.steady_window`) counts the stall alike: neither warm-up nor in the window."""
    adapter = ScriptedEpochs(events=events)
    config = fake_config(devices=1, batch_per_device=16, dataset="chestxray:/data", epochs=2)
    result = run_training(adapter, config, step_clock=adapter.clock)
    device_extra = 0.05 if events else ScriptedAdapter.WAIT
    assert (result.timing.warmup_steps, result.timing.warmup_detected, result.timing.stall_steps) == (2, True, 1)
    assert result.timing.stall_seconds == pytest.approx(2.0 + device_extra)
    assert result.timing.steady_steps == 21
    assert result.timing.samples_per_sec == pytest.approx(16 * 21 / (21 * (0.1 + device_extra)))
    assert result.timing.samples_per_sec_low == pytest.approx(result.timing.samples_per_sec)
    assert result.timing.warmup_seconds + result.timing.stall_seconds + result.window_seconds == pytest.approx(
        result.train_seconds
    )
    assert result.by_epoch.epoch_samples_per_sec == pytest.approx(16 * 24 / result.by_epoch.time_to_train_seconds)
