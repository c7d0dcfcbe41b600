"""A framework and a model added from a plugin package touch no file of mgbench (docs/extending.md).

The package is written to a temporary folder, as a third party would write it: a `spec.py`
declaring the framework (`FRAMEWORK`) and a new catalogue model (`ADDED_MODELS`), an adapter
training a linear head over the mean pixel in numpy, and a `models.py` with the builder named
as the model. Put on PYTHONPATH and named in MGBENCH_PLUGINS, it is listed, planned and
compared like a built-in framework.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import mgbench, read_rows

from mgbench.core.errors import UsageError
from mgbench.core.models import model_spec
from mgbench.frameworks.registry import framework_spec

PACKAGE = "throwaway_fw"
PLUGIN = f"{PACKAGE}.spec"
FILES = {
    "__init__.py": '"""A throwaway framework, written by tests/test_extending.py."""\n',
    "spec.py": """
from mgbench.core.inputs import ImageInput
from mgbench.core.models import ModelSpec
from mgbench.core.objective import SOFTMAX_CROSS_ENTROPY
from mgbench.core.optimization import IMAGE_SGD
from mgbench.frameworks.specs import Capabilities, FrameworkSpec, ModelBuilders, StrategySpec

ADDED_MODELS = (
    ModelSpec(
        "throwaway_net", ImageInput(16), 3, SOFTMAX_CROSS_ENTROPY, "a linear head over the mean pixel", 12, 2, optimization=IMAGE_SGD
    ),
)
FRAMEWORK = FrameworkSpec(
    name="throwaway",
    module="throwaway_fw.adapter",
    strategies=(StrategySpec("solo", "inprocess", "one process, numpy only"),),
    import_names=("numpy",),
    environment="throwaway",
    install_hint="nothing to install",
    capabilities=Capabilities(
        ModelBuilders("throwaway_fw.models", ("throwaway_net",)), precisions=("fp32",), data_formats=("channels_last",)
    ),
)
""",
    "models.py": """
import numpy as np


def throwaway_net(num_classes):
    return [np.zeros((3, num_classes)), np.zeros(num_classes)]
""",
    "adapter.py": """
from itertools import cycle

import numpy as np

from mgbench.training.protocol import Adapter, ModelInfo, Placement
from mgbench.datasets.synthetic import Shard, held_out_batch, synthetic_pool
from throwaway_fw.spec import FRAMEWORK


class Trainer(Adapter):
    def setup(self, config):
        self.accept(config)
        self._placement = Placement(0, 1, ["cpu"] * config.devices)
        build = FRAMEWORK.capabilities.builders.builder(config.job.model, FRAMEWORK.name)
        self.weights, self.bias = build(config.job.spec.num_classes)
        self.loss = 0.0
        return ModelInfo(parameters=self.weights.size + self.bias.size)

    def _batch(self, seed, draw):
        shard = Shard(0, self.config.global_batch)
        return draw(self.config.job.spec, self.config.job.input_size, shard, seed, True)

    def _loss_and_gradients(self, images, labels):
        features = images.mean(axis=(1, 2))
        logits = features @ self.weights + self.bias
        probabilities = np.exp(logits - logits.max(axis=1, keepdims=True))
        probabilities /= probabilities.sum(axis=1, keepdims=True)
        loss = -np.log(probabilities[np.arange(len(labels)), labels]).mean()
        probabilities[np.arange(len(labels)), labels] -= 1
        error = probabilities / len(labels)
        return loss, features.T @ error, error.sum(axis=0)

    def batches(self):
        return cycle(self._batch(self.config.job.seed, synthetic_pool))

    def train_step(self, batch):
        self.loss, weights, bias = self._loss_and_gradients(*batch)
        self.weights -= self.config.job.learning_rate * weights
        self.bias -= self.config.job.learning_rate * bias

    def synchronize(self):
        return None

    def last_loss(self):
        return float(self.loss)

    def evaluate(self, split="val"):
        return {"loss": float(self._loss_and_gradients(*self._batch(self.config.job.seed + 1, held_out_batch))[0])}

    def framework_versions(self):
        return {"numpy": np.__version__}

    def save_state(self, path):
        np.savez(path, weights=self.weights, bias=self.bias)


def create_adapter(strategy):
    return Trainer(strategy)
""",
}


@pytest.fixture
def plugin(tmp_path: Path) -> dict[str, str]:
    """The plugin package written under `tmp_path`, and the variables that register it."""
    package = tmp_path / "plugin" / PACKAGE
    package.mkdir(parents=True)
    for name, text in FILES.items():
        (package / name).write_text(text)
    path = os.pathsep.join(filter(None, [str(package.parent), os.environ.get("PYTHONPATH", "")]))
    return {"PYTHONPATH": path, "MGBENCH_PLUGINS": PLUGIN}


def test_a_plugin_framework_and_its_model_are_registered(plugin, monkeypatch):
    monkeypatch.syspath_prepend(plugin["PYTHONPATH"].split(os.pathsep)[0])
    monkeypatch.setenv("MGBENCH_PLUGINS", PLUGIN)
    assert framework_spec("throwaway").capabilities.models == ("throwaway_net",)
    assert model_spec("throwaway_net").description == "a linear head over the mean pixel"


def test_a_plugin_model_named_as_one_in_the_catalogue_is_refused(tmp_path, monkeypatch):
    (tmp_path / "clashing_plugin.py").write_text(
        "from mgbench.core.models import MODELS\nADDED_MODELS = (MODELS['tiny'],)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("MGBENCH_PLUGINS", "clashing_plugin")
    with pytest.raises(UsageError, match="MGBENCH_PLUGINS names 'clashing_plugin', whose ADDED_MODELS has"):
        model_spec("tiny")


@pytest.mark.slow
def test_mgbench_list_shows_the_plugin_framework_and_its_model(plugin):
    """Slow only because `list` probes every framework's interpreter for its installation."""
    listed = mgbench("list", **plugin)
    assert listed.returncode == 0, listed.stderr
    said = " ".join(listed.stdout.split())
    for shown in ("throwaway", "solo", "models throwaway_net", "a linear head over the mean pixel"):
        assert shown in said


def test_planning_refuses_a_model_the_plugin_does_not_build_before_launching(plugin, tmp_path):
    out = tmp_path / "tiny"
    done = mgbench(
        "compare", "--frameworks", "throwaway", "--model", "tiny", "--gpus", "2", "--out", str(out), **plugin
    )
    rows = read_rows(out)
    assert list(rows.status) == ["unsupported", "unsupported"], done.stderr
    assert set(rows.error) == {"throwaway has no tiny (models: throwaway_net)"}
    assert not (out / "logs").exists()


@pytest.mark.slow
def test_a_compare_trains_the_plugin_model_on_one_and_two_cpu_devices(plugin, tmp_path):
    out = tmp_path / "run"
    options = ("--model", "throwaway_net", "--steps", "6", "--batch-per-gpu", "4", "--lr", "0.5")
    done = mgbench("compare", "--frameworks", "throwaway", "--gpus", "2", *options, "--out", str(out), **plugin)
    assert done.returncode == 0, done.stderr
    rows = read_rows(out).set_index("devices")
    assert list(rows.status) == ["ok", "ok"] and set(rows.strategy) == {"solo"}
    assert (rows.parameters == 12).all() and (rows.samples_per_sec > 0).all()
