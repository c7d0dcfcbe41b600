"""Gluon (MXNet) adapter, run in its own environment (`make env-gluon`); skipped when not built.

The equivalence test runs `mgbench run` as users do: one step with 2 `mx.cpu(i)` contexts on
global batch B leaves the same weights as 1 context on B, and the step moved the weights far
more than the two differ.
"""

import json

import numpy as np
import pytest
from conftest import assert_two_devices_equal_one, framework_python, mgbench, one_epoch_rows, run_in, tiny_job

ONE_STEP_ON_TWO_CONTEXTS = """
import json
import mxnet as mx
from mgbench.core.config import RunConfig
from mgbench.frameworks.gluon import models
from mgbench.frameworks.gluon.adapter import create_adapter
adapter = create_adapter("device")
info = adapter.setup(RunConfig.flat(framework="gluon", strategy="device", model="tiny", devices=2, device_kind="cpu",
                               batch_per_device=4, steps=1, learning_rate=0.5))
adapter.train_step(next(adapter.batches()))
adapter.synchronize()
first = adapter.contexts[0]
difference = max(  # between any device's copy of a trainable weight and device 0's
    float(mx.nd.abs(copy.as_in_context(first) - p.data(first)).max().asscalar())
    for p in models.trainable(adapter.net).values()
    for copy in p.list_data()
)
print(json.dumps({"contexts": adapter.placement.device_names, "difference": difference,
                  "loss": adapter.last_loss()}))
"""


@pytest.fixture(scope="module")
def gluon_python():
    return framework_python("gluon")


def test_weights_are_identical_on_every_context_after_a_step(gluon_python):
    result = json.loads(run_in(gluon_python, ONE_STEP_ON_TWO_CONTEXTS))
    assert result["contexts"] == ["cpu(0)", "cpu(1)"]
    assert result["loss"] > 0
    assert result["difference"] == 0.0


@pytest.mark.slow
def test_two_contexts_equal_one_context_on_the_same_global_batch(tmp_path, gluon_python):
    assert_two_devices_equal_one(tmp_path, "gluon", "device", 1e-5)


def test_compare_uses_the_gluon_environment_and_reports_nccl_on_cpu_unsupported(tmp_path, gluon_python):
    done = mgbench(
        "compare",
        "--frameworks",
        "gluon",
        "--strategies",
        "nccl",
        "--gpus",
        "2",
        *tiny_job(2, batch=2, device="cpu"),
        "--out",
        str(tmp_path / "c"),
    )
    rows = [json.loads(line) for line in (tmp_path / "c" / "results.jsonl").read_text().splitlines()]
    statuses = {row["devices"]: row["status"] for row in rows}
    assert statuses == {1: "ok", 2: "unsupported"}, done.stdout + done.stderr
    ok = next(row for row in rows if row["status"] == "ok")
    assert ok["interpreter"] == gluon_python
    assert ok["framework_versions"]["mxnet"] == "1.9.1"


LOADER_MATCHES_THE_SHARED_READER = """
import json, sys
import numpy as np
from mgbench.core.config import RunConfig
from mgbench.datasets.augment import Augmentation
from mgbench.datasets.sampling import epoch_batches
from mgbench.datasets.synthetic import Shard
from mgbench.frameworks.gluon.adapter import create_adapter
config = RunConfig.flat(framework="gluon", strategy="device", model="tiny", devices=2, device_kind="cpu",
                   batch_per_device=4, steps=1, dataset="chestxray:" + sys.argv[1], epochs=1, image_size=32, workers=2)
adapter = create_adapter("device")
adapter.setup(config)
train, augmentation = adapter.dataset.train, Augmentation.for_input(32)
read = {}
for epoch in (0, 1):
    shards = [epoch_batches(len(train), 8, Shard.of_rank(r, 2, 8), epoch, config.job.seed) for r in range(2)]
    batches = list(adapter.epoch_batches(epoch))
    assert len(batches) == adapter.steps_per_epoch() == len(shards[0])
    for b, (images, labels) in enumerate(batches):
        for context, keys in enumerate(shards):
            indices = keys[b][:]
            assert str(images[context].context) == f"cpu({context})"
            expected = np.stack([augmentation.train(train.files[i], config.job.seed, epoch, i) for i in indices])
            assert np.array_equal(images[context].asnumpy(), expected), (epoch, b, context)
            assert np.array_equal(labels[context].asnumpy(), train.targets[indices])
            read.setdefault(epoch, []).extend(indices)
print(json.dumps({"read": read, "size": len(train), "per_epoch": adapter.steps_per_epoch(),
                  "val": adapter.evaluate("val"), "test": adapter.evaluate("test")}))
"""


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    root = tmp_path_factory.mktemp("sample")
    assert mgbench("make-sample-chestxray", str(root), "--n", "64", "--size", "38").returncode == 0
    return root


def test_loader_reads_each_context_the_shared_shards_and_scores_both_held_out_splits(gluon_python, sample):
    """Gluon's DataLoader, split over 2 contexts, yields per epoch exactly the shared reader's
    images (same augmentation draws) and labels, each training image at most once, every whole
    global batch."""
    found = json.loads(run_in(gluon_python, LOADER_MATCHES_THE_SHARED_READER, str(sample)))
    for indices in found["read"].values():
        assert len(indices) == len(set(indices)) == found["per_epoch"] * 8
    assert found["read"]["0"] != found["read"]["1"]
    for split in ("val", "test"):
        assert set(found[split]) == {"loss", "auc"} and 0 <= found[split]["auc"] <= 1
    assert found["val"] != found["test"]


@pytest.mark.slow
def test_one_epoch_of_the_sample_through_gluons_loader_on_two_contexts(gluon_python, sample, tmp_path):
    rows = one_epoch_rows("gluon", "device", sample, tmp_path / "run")
    assert all(row["interpreter"] == gluon_python for row in rows)


SHARED_START_ON_TWO_CONTEXTS = """
import json, sys
import numpy as np
from mgbench.core.config import RunConfig
from mgbench.core.initial_weights import reference_weights
from mgbench.frameworks.gluon.adapter import create_adapter
from mgbench.frameworks.gluon.weights import weighted_layers
config = RunConfig.flat(framework="gluon", strategy="device", model="tiny", devices=2, device_kind="cpu",
                   batch_per_device=4, steps=1, init=sys.argv[1])
adapter = create_adapter("device")
info = adapter.setup(config)
reference = reference_weights(config.job.spec, config.job.seed, config.job.input_size).arrays
largest = 0.0
for path, layer, names in weighted_layers(adapter.net):
    for attribute, torch_name in names.items():
        for copy in getattr(layer, attribute).list_data():
            largest = max(largest, float(np.abs(copy.asnumpy() - reference[f"{path}.{torch_name}"]).max()))
print(json.dumps({"digest": info.init_digest, "reference": reference_weights(config.job.spec, config.job.seed, config.job.input_size).digest,
                  "difference": largest}))
"""


def test_init_same_starts_every_context_from_the_shared_weights_and_records_their_digest(gluon_python):
    same = json.loads(run_in(gluon_python, SHARED_START_ON_TWO_CONTEXTS, "same"))
    assert same["digest"] == same["reference"]
    assert same["difference"] == 0.0
    own = json.loads(run_in(gluon_python, SHARED_START_ON_TWO_CONTEXTS, "framework"))
    assert own["digest"] is None
    assert own["difference"] > 0.01


LOAD_REFUSALS = """
import json
import mxnet as mx
import numpy as np
from mgbench.core.errors import UsageError
from mgbench.core.initial_weights import InitialWeights, reference_weights
from mgbench.core.kinds import DataFormat
from mgbench.core.models import model_spec
from mgbench.frameworks.gluon import models, weights
spec = model_spec("tiny")
arrays = reference_weights(spec, 0, spec.image_size).arrays
variants = {
    "missing": {name: a for name, a in arrays.items() if name != "3.bias"},
    "extra": {**arrays, "8.weight": np.zeros(3, np.float32)},
    "reshaped": {**arrays, "7.weight": arrays["7.weight"].T.copy()},
}
errors = {}
for variant, given in variants.items():
    net = models.build_model(spec, 32, DataFormat.CHANNELS_FIRST)
    net.initialize(ctx=mx.cpu())
    try:
        weights.load_initial(net, InitialWeights(given, "test"))
    except UsageError as error:
        errors[variant] = str(error)
print(json.dumps(errors))
"""


def test_loading_names_the_array_a_net_lacks_leaves_over_or_shapes_otherwise(gluon_python):
    errors = json.loads(run_in(gluon_python, LOAD_REFUSALS))
    assert "'3.bias'" in errors["missing"]
    assert "8.weight" in errors["extra"]
    assert "'7.weight'" in errors["reshaped"] and "(32, 10)" in errors["reshaped"]


BATCH_NORM_SETTINGS = """
import json
import mxnet as mx
import numpy as np
from mxnet import autograd
from mxnet.gluon import nn
from mgbench.core.models import Hyperparameters
from mgbench.frameworks.gluon.weights import set_batch_norm
net = nn.HybridSequential()
net.add(nn.BatchNorm(in_channels=1))
set_batch_norm(net, Hyperparameters(batch_norm_momentum=0.25, batch_norm_epsilon=0.5))
net.initialize(ctx=mx.cpu())
net.hybridize(static_alloc=True, static_shape=True)
x = np.arange(8, dtype=np.float32).reshape(2, 1, 2, 2)
with autograd.record():
    y = net(mx.nd.array(x))
y.backward()
print(json.dumps({"running_mean": float(net[0].running_mean.data().asscalar()),
                  "out": y.asnumpy().ravel().tolist(),
                  "expected": ((x - x.mean()) / np.sqrt(x.var() + 0.5)).ravel().tolist()}))
"""


def test_batch_norm_takes_the_jobs_share_of_each_batch_and_epsilon(gluon_python):
    """torch's momentum 0.25 is the batch's weight in the average: from 0, a batch of mean 3.5 leaves 0.875."""
    found = json.loads(run_in(gluon_python, BATCH_NORM_SETTINGS))
    assert found["running_mean"] == pytest.approx(0.25 * 3.5)
    assert found["out"] == pytest.approx(found["expected"], abs=1e-5)


STEPS_UNDER_A_CHANGING_RATE = """
import json, sys
import mxnet as mx
from mxnet import autograd, gluon
from mgbench.core.optimization import SGD
from mgbench.frameworks.gluon.sgd import TorchFormSGD
case = json.loads(sys.argv[1])
contexts = [mx.cpu(0), mx.cpu(1)]
def optimizer(form, rate):
    if form == "torch":
        return TorchFormSGD.for_job(SGD(nesterov=case["nesterov"], weight_decay=case["decay"]), rate)
    name = "nag" if case["nesterov"] else "sgd"
    return mx.optimizer.create(name, learning_rate=rate, momentum=0.9, wd=case["decay"])
found = {}
for form in ("torch", "gluon"):
    for on_kvstore in (True, False):
        weight = gluon.Parameter("w", shape=(len(case["start"]),))
        weight.initialize(mx.init.Constant(mx.nd.array(case["start"])), ctx=contexts)
        adapter = gluon.Trainer({"w": weight}, optimizer(form, case["rates"][0]), kvstore="device",
                                update_on_kvstore=on_kvstore)
        steps = []
        for rate, gradient in zip(case["rates"], case["gradients"]):
            adapter.set_learning_rate(rate)
            with autograd.record():
                losses = [(w * mx.nd.array(gradient, ctx=w.context)).sum() for w in weight.list_data()]
            autograd.backward(losses)
            adapter.step(len(contexts))
            steps.append([w.asnumpy().tolist() for w in weight.list_data()])
        found[f"{form} on_kvstore={on_kvstore}"] = steps
print(json.dumps(found))
"""


def torch_sgd_steps(start, rates, gradients, nesterov, decay, momentum=0.9):
    """torch.optim.SGD's steps (no dampening), written out in numpy."""
    weight, buffer, steps = np.array(start), np.zeros(len(start)), []
    for rate, gradient in zip(rates, gradients):
        gradient = np.array(gradient) + decay * weight
        buffer = momentum * buffer + gradient
        weight = weight - rate * (gradient + momentum * buffer if nesterov else buffer)
        steps.append(weight)
    return steps


@pytest.mark.parametrize(("nesterov", "decay"), [(False, 0.0), (False, 0.01), (True, 0.01)])
def test_sgd_steps_as_torch_while_the_rate_changes_on_every_context(gluon_python, nesterov, decay):
    """With a rate changed before every step, each step's weights on both contexts are torch's
    (whether the kvstore or each context updates), and Gluon's own momentum SGD leaves them:
    its velocity carries the old rates."""
    case = {
        "start": [0.5, -1.0, 2.0],
        "rates": [0.1, 0.05, 0.02, 0.01],
        "gradients": [[1.0, -2.0, 0.5], [0.5, 1.0, -1.0], [2.0, 0.0, 1.0], [-1.0, 1.0, 0.25]],
        "nesterov": nesterov,
        "decay": decay,
    }
    found = json.loads(run_in(gluon_python, STEPS_UNDER_A_CHANGING_RATE, json.dumps(case)))
    expected = torch_sgd_steps(case["start"], case["rates"], case["gradients"], nesterov, decay)
    for on_kvstore in (True, False):
        torch_form, gluon_form = found[f"torch on_kvstore={on_kvstore}"], found[f"gluon on_kvstore={on_kvstore}"]
        for step, weights in enumerate(expected):
            for context in (0, 1):
                np.testing.assert_allclose(torch_form[step][context], weights, rtol=0, atol=1e-6)
        assert np.abs(np.array(gluon_form[-1][0]) - expected[-1]).max() > 1e-3
