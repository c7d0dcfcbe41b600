"""ViT-B/16 in the catalogue: its parameters follow the image size, its size must split into
patches, its shared start is torchvision's (names, shapes and initialisation), and what Keras
and Gluon cannot match of batch-norm is not said of a model without it."""

import numpy as np
import pytest

from mgbench.core.errors import UsageError
from mgbench.core.initial_weights import reference_weights
from mgbench.core.job import Job, settle
from mgbench.core.kinds import DataFormat
from mgbench.core.models import model_spec
from mgbench.frameworks.pytorch.models import build_model
from mgbench.frameworks.registry import framework_spec

VIT = model_spec("vit_b_16")


@pytest.mark.parametrize("size", [32, 64, 224])
def test_the_reference_count_follows_the_position_embedding(size):
    model = build_model(VIT, size, DataFormat.CHANNELS_FIRST)
    trainable = [p for p in model.parameters() if p.requires_grad]
    assert sum(p.numel() for p in trainable) == VIT.parameters_at(size)
    assert len(trainable) == VIT.reference_tensors
    assert VIT.parameters_at(224) == 86_567_656
    assert framework_spec("keras-jax").capabilities.expected_parameters("vit_b_16", size) == VIT.parameters_at(size)


def test_an_image_size_that_does_not_split_into_patches_is_one_line():
    with pytest.raises(UsageError, match="multiple of 16, not 72"):
        settle(Job("vit_b_16", "cpu", 1, 1, image_size=72))
    settle(Job("vit_b_16", "cpu", 1, 1, image_size=64))
    settle(Job("resnet50", "cpu", 1, 1, image_size=72))


def test_the_shared_start_has_torchvisions_names_shapes_and_initialisation():
    size = 64
    arrays = reference_weights(VIT, 0, size).arrays
    state = build_model(VIT, size, DataFormat.CHANNELS_FIRST).state_dict()
    assert {name: tuple(a.shape) for name, a in arrays.items()} == {n: tuple(t.shape) for n, t in state.items()}
    assert not arrays["class_token"].any() and not arrays["heads.head.weight"].any()
    np.testing.assert_allclose(arrays["encoder.pos_embedding"].std(), 0.02, rtol=0.02)
    in_proj = arrays["encoder.layers.encoder_layer_3.self_attention.in_proj_weight"]
    assert np.abs(in_proj).max() <= np.sqrt(6 / (768 + 2304)) and np.abs(in_proj).max() > 0.9 * np.sqrt(6 / 3072)
    np.testing.assert_allclose(arrays["conv_proj.weight"].std(), np.sqrt(1 / (3 * 16 * 16)), rtol=0.02)
    assert np.abs(arrays["encoder.layers.encoder_layer_0.mlp.0.bias"]).max() < 1e-5
    torch_draw = {n: t.float() for n, t in build_model(VIT, size, DataFormat.CHANNELS_FIRST).state_dict().items()}
    for name in ("conv_proj.weight", "encoder.layers.encoder_layer_0.mlp.3.weight"):
        assert arrays[name].std() == pytest.approx(float(torch_draw[name].std()), rel=0.05)


def test_batch_norms_unmatched_moving_variance_is_said_only_of_models_with_batch_norm():
    for framework in ("keras-jax", "gluon"):
        unmatched = framework_spec(framework).capabilities.builders.unmatched
        assert unmatched.get("resnet50") and unmatched.get("densenet121")
        assert not unmatched.get("vit_b_16") and not unmatched.get("tiny")
