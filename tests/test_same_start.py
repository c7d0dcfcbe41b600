"""`--init same`: every framework's build of a model, loaded with the shared initial weights,
computes pytorch's logits on one fixed batch (fp32), in inference and in training mode."""

from pathlib import Path

import numpy as np
import pytest
from conftest import TESTS, framework_python

MODELS = ("tiny", "resnet50", "densenet121", "vit_b_16")
SIZE = {"tiny": 32, "resnet50": 128, "densenet121": 64, "vit_b_16": 32}
"""Image sides: ResNet-50 at 128 px keeps 4x4 maps in its last stage, whose batch statistics (2 images)
are then taken over 32 values, not 8, which float32 rounding would move by close to the tolerance."""
RELATIVE_TOLERANCE = 1e-4
PROBES = {
    "chainer": "start_probe_chainer.py",
    "gluon": "start_probe_gluon.py",
    "pytorch": "start_probe_pytorch.py",
    "keras-tf": "start_probe_keras.py",
    "keras-jax": "start_probe_keras.py",
    "keras-torch": "start_probe_keras.py",
    "tensorflow": "start_probe_keras.py",
}
"""The probe each framework's logits come from (the Keras probe serves every Keras backend)."""


def probe_logits(framework: str, folder: Path) -> dict[str, dict[str, np.ndarray]]:
    """Every model's logits from the framework's probe, in one process of its interpreter."""
    import subprocess

    from conftest import cli_env

    from mgbench.core.config import RunConfig
    from mgbench.frameworks.registry import framework_spec

    # The variables a run of the framework sets before importing it (Keras' backend among them).
    spec = framework_spec(framework)
    variables = spec.variables_for(RunConfig.flat(framework, spec.defaults[0], "tiny", 1, "cpu", 1, 1))
    env = cli_env(PYTHONPATH=f"{TESTS.parent}:{TESTS}", **variables)
    outs = {model: folder / f"{framework}-{model}.npz" for model in MODELS}
    arguments = [str(part) for model in MODELS for part in (model, SIZE[model], outs[model])]
    done = subprocess.run(
        [framework_python(framework), str(TESTS / PROBES[framework]), *arguments],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    logits = {}
    for model, out in outs.items():
        with np.load(out) as saved:
            logits[model] = dict(saved)
    return logits


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, np.ndarray]]:
    return probe_logits("pytorch", tmp_path_factory.mktemp("reference"))


def relative_difference(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).max() / np.abs(b).max())


@pytest.mark.slow
@pytest.mark.parametrize("framework", sorted(set(PROBES) - {"pytorch"}))
def test_the_shared_start_gives_pytorchs_logits(framework: str, reference, tmp_path: Path) -> None:
    logits = probe_logits(framework, tmp_path)
    for model in MODELS:
        for mode in ("eval", "train"):
            got, expected = logits[model][mode], reference[model][mode]
            assert got.shape == expected.shape
            assert relative_difference(got, expected) < RELATIVE_TOLERANCE, (model, mode, got, expected)


def test_the_reference_logits_depend_on_the_weights(reference, tmp_path: Path) -> None:
    """The comparison can fail: outputs differ between samples and, with batch-norm, between modes."""
    for model in MODELS:
        eval_logits, train_logits = reference[model]["eval"], reference[model]["train"]
        assert np.abs(eval_logits[0] - eval_logits[1]).max() > 1e-3
        if model in ("resnet50", "densenet121"):
            assert relative_difference(eval_logits, train_logits) > 1e-2
