"""Chainer adapter: ChainerMN under mpiexec in its own environment (`make env-chainer`).

The equivalence test runs `mgbench run` as users do: one step on 2 MPI processes (naive
communicator) with global batch B leaves the same weights as 1 process on B (on GPUs, through
`pure_nccl`: tests/test_gpu_data_parallel.py). The numpy-2 compatibility layer is checked on this interpreter's numpy
(outside Chainer), and with Chainer itself where an interpreter with numpy 2 and Chainer is named
in MGBENCH_CHAINER_NUMPY2_PYTHON. The CuPy-14 fix of ChainerMN's packing kernels is checked on
ChainerMN's own kernel sources here (CuPy's kernel factory recorded, not compiled), and compiled
and run by CuPy where there is a GPU.
"""

import json
import os
import sys

import numpy as np
import pytest
from conftest import assert_two_devices_equal_one, framework_python, mgbench, one_epoch_rows, run_in

from mgbench.frameworks.chainer.cupy_compat import CARRAY_INCLUDE, FLOAT16_INCLUDE, needs_float16_header
from mgbench.machine.devices import visible_gpus

RATES = (0.1, 0.05, 0.02, 0.01)
"""A rate changed between steps, down as the warm-up's ramp may go."""
START = np.array([1.0, -2.0, 0.5], dtype=np.float32)
GRADIENTS = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5], [-2.0, 1.0, 0.75], [0.1, -0.3, 1.25]], dtype=np.float32)

GPUS = len(visible_gpus())

COMPAT_WITHOUT_DISTUTILS = """
import json, sys
sys.modules["numpy.distutils"] = None  # as on Python >= 3.12, where numpy 2 has no numpy.distutils
sys.modules["pkg_resources"] = None  # as with a setuptools that no longer ships it
import numpy as np
from mgbench.frameworks.chainer.compat import apply
patched = apply()
import numpy.distutils.system_info as system_info
import pkg_resources
try:
    pkg_resources.require("cupy>=7.7.0,<8.0.0")
    found = True
except pkg_resources.DistributionNotFound:
    found = False
print(json.dumps({"patched": patched, "int": [t.__name__ for t in np.sctypes["int"]],
                  "float_is_builtin": np.float is float, "blas": system_info.get_info("blas_opt"),
                  "requirement_found": found}))
"""

CHAINER_ON_NUMPY2 = """
import json
from mgbench.frameworks.chainer import compat as chainer_compat
patched = chainer_compat.apply()
import chainer.functions as F
import numpy as np
from mgbench.core.models import MODELS
from mgbench.frameworks.chainer.models import build_model
model = build_model(MODELS["tiny"], 32, "channels_first")
loss = F.softmax_cross_entropy(model(np.ones((2, 3, 32, 32), np.float32)), np.array([1, 2], np.int32))
loss.backward()
resized = F.resize_images(np.ones((1, 3, 4, 4), np.float32), (8, 8))
strided = F.as_strided(np.arange(6, dtype=np.float32), (2, 2), (1, 1))
print(json.dumps({"numpy": np.__version__, "patched": patched, "loss": float(loss.array),
                  "shapes": [list(resized.shape), list(strided.shape)]}))
"""


SHARED_START_BY_NAME = """
import dataclasses, json
import numpy as np
from mgbench.frameworks.chainer import models, weights
import chainer.links as L
from mgbench.core.errors import UsageError
from mgbench.core.initial_weights import reference_weights
from mgbench.core.models import MODELS
spec = MODELS["resnet50"]
net = models.build_model(spec, 64, "channels_first")
weights.set_batch_norm(net, spec.hyperparameters)
reference = reference_weights(spec, 0, 64)
moving_var = "layer3.0.downsample.1.running_var"  # drawn as ones, Chainer's own start: made distinct
reference.arrays[moving_var] = np.arange(1, 1025, dtype=np.float32)
weights.load_initial(net, reference)
stage = net["layer3"]
applied = [stage[name].conv1.W.array for name in stage.order]
norms = [link for link in net.links() if isinstance(link, L.BatchNormalization)]
try:
    weights.load_initial(models.build_model(spec, 64, "channels_first"),
                         reference_weights(dataclasses.replace(spec, num_classes=10), 0, 64))
    refused = ""
except UsageError as error:
    refused = str(error)
print(json.dumps({
    "applied_in_torch_order": all(np.array_equal(w, reference.arrays[f"layer3.{i}.conv1.weight"])
                                  for i, w in enumerate(applied)),
    "blocks": len(applied),
    "strided_3x3": list(stage["0"].conv2.stride),
    "running_var": bool(np.array_equal(stage["0"].downsample["1"].avg_var,
                                       reference.arrays[moving_var])),
    "fc_bias": bool(np.array_equal(net["fc"].b.array, reference.arrays["fc.bias"])),
    "decay_eps": sorted({(link.decay, link.eps) for link in norms}),
    "refused": refused,
}))
"""


PACKING_KERNEL_SOURCES = """
import json, sys
from pathlib import Path
from mgbench.frameworks.chainer import compat
compat.apply()
import chainer.backends.cuda
from chainermn.communicators import _memory_utility as memory
from mgbench.frameworks.chainer.cupy_compat import PACKING_KERNELS, apply

class Kernel:
    def __init__(self, code, name, options=(), backend="nvrtc"):
        self.code, self.name, self.options, self.backend = code, name, options, backend

chainer.backends.cuda.raw = Kernel  # records what ChainerMN hands to CuPy's RawKernel
original = {name: getattr(memory, name)() for name in PACKING_KERNELS}
untouched = apply(Path(sys.argv[1]))
patched = apply(Path(sys.argv[2])) + apply(Path(sys.argv[2]))
kernels = {name: getattr(memory, name)() for name in PACKING_KERNELS}
print(json.dumps({"untouched": untouched, "patched": patched,
                  "wrapped_once": [not hasattr(getattr(memory, n).__wrapped__, "__wrapped__") for n in PACKING_KERNELS],
                  "original": {n: k.code for n, k in original.items()},
                  "kernels": {n: [k.code, k.name, list(k.options), k.backend] for n, k in kernels.items()}}))
"""

PACKING_ROUND_TRIP_ON_GPU = """
import json
import numpy as np
from mgbench.frameworks.chainer import compat, cupy_compat
compat.apply()
import chainer, cupy
from chainermn.communicators import _memory_utility as memory
patched = cupy_compat.apply()
device = chainer.get_device("@cupy:0")
device.use()
link = chainer.links.Linear(3, 5)
link.to_device(device)
for param in link.params():
    param.grad = cupy.arange(param.size, dtype=cupy.float32).reshape(param.shape) / 8
params = memory.extract_params_set_grad(link, False)
expected = cupy.concatenate([param.grad.ravel() for param in params])
data = memory.ParamsData(params, "grad", False)
buffer = memory.DeviceMemory()
buffer.assign(int(data.n_elems) * 2)
memory._batched_pack_params(data, buffer, np.dtype(np.float16))
packed = buffer.array(int(data.n_elems), dtype=np.float16).astype(cupy.float32)
for param in params:
    param.grad[...] = -1
memory._batched_unpack_params(data, buffer, np.dtype(np.float16))
unpacked = cupy.concatenate([param.grad.ravel() for param in params])
print(json.dumps({"cupy": cupy.__version__, "patched": patched, "expected": expected.tolist(),
                  "packed": packed.tolist(), "unpacked": unpacked.tolist()}))
"""


def cupy_headers(folder, carray: str):
    """A CuPy include folder whose carray.cuh holds `carray`, with a float16.cuh beside it."""
    headers = folder / "cupy"
    headers.mkdir(parents=True)
    (headers / "carray.cuh").write_text(carray)
    (headers / "float16.cuh").write_text('#include "cupy/carray.cuh"\n#include <cuda_fp16.h>\n')
    return folder


CUPY13_CARRAY = "#pragma once\n#include <cuda_fp16.h>\nstruct half;\n"
CUPY14_CARRAY = "#pragma once\nclass bfloat16;\nclass float16;\n"


@pytest.fixture(scope="module")
def chainer_python():
    return framework_python("chainer")


@pytest.fixture(scope="module")
def chainer_gpu_python(chainer_python):
    """Chainer's interpreter where it can train on GPUs: a CUDA device visible and CuPy installed."""
    if GPUS < 1:
        pytest.skip("no CUDA device: CuPy compiles and launches kernels on one")
    probe = "import importlib.util; print(importlib.util.find_spec('cupy') is not None)"
    if run_in(chainer_python, probe).strip() != "True":
        pytest.skip(f"{chainer_python} has no CuPy (pip install cupy-cuda12x or cupy-cuda13x there)")
    return chainer_python


@pytest.mark.slow
def test_two_mpi_processes_equal_one_process_on_the_same_global_batch(tmp_path, chainer_python):
    assert_two_devices_equal_one(tmp_path, "chainer", "chainermn", 1e-5)


@pytest.mark.skipif(int(np.__version__.split(".")[0]) < 2, reason="the compatibility layer acts on numpy >= 2 only")
def test_compat_layer_restores_what_chainer_needs_from_numpy_1():
    result = json.loads(run_in(sys.executable, COMPAT_WITHOUT_DISTUTILS))
    assert result == {
        "patched": ["numpy.sctypes", "numpy.distutils", "numpy.float", "pkg_resources"],
        "int": ["int8", "int16", "int32", "int64"],
        "float_is_builtin": True,
        "blas": {},
        "requirement_found": False,
    }


def test_compat_layer_changes_nothing_on_numpy_1(chainer_python):
    probe = "import json; from mgbench.frameworks.chainer import compat as c; print(json.dumps([c.NUMPY_2, c.apply()]))"
    result = json.loads(run_in(chainer_python, probe))
    if result[0]:
        pytest.skip(f"{chainer_python} has numpy 2 (a GPU stack's): the layer acts there")
    assert result[1] == []


def test_chainer_trains_on_numpy_2_with_the_compat_layer():
    python = os.environ.get("MGBENCH_CHAINER_NUMPY2_PYTHON")
    if not python:
        pytest.skip(
            "set MGBENCH_CHAINER_NUMPY2_PYTHON to an interpreter with numpy 2 and Chainer (pip install --no-deps chainer)"
        )
    result = json.loads(run_in(python, CHAINER_ON_NUMPY2))
    assert int(result["numpy"].split(".")[0]) >= 2
    assert "numpy.sctypes" in result["patched"] and "numpy.float" in result["patched"]
    assert result["loss"] > 0
    assert result["shapes"] == [[1, 3, 8, 8], [2, 2]]


def test_shared_start_loads_each_torchvision_array_into_the_link_applied_at_its_place(chainer_python):
    """ResNet-50's third stage: the blocks, applied in order, hold torchvision's layer3.0..5
    weights (a container naming its links out of order would not); the stride sits in the 3x3
    convolution; moving averages and biases are loaded; every batch-norm link takes torch's
    momentum 0.1 as decay 0.9 and epsilon 1e-5; weights drawn for another head are refused."""
    found = json.loads(run_in(chainer_python, SHARED_START_BY_NAME))
    assert found["applied_in_torch_order"] and found["blocks"] == 6
    assert found["strided_3x3"] == [2, 2]
    assert found["running_var"] and found["fc_bias"]
    assert found["decay_eps"] == [[0.9, 1e-5]]
    assert "fc.weight" in found["refused"]


def test_float16_header_is_needed_only_where_carray_lacks_cuda_fp16(tmp_path):
    assert needs_float16_header(cupy_headers(tmp_path / "14", CUPY14_CARRAY))
    assert not needs_float16_header(cupy_headers(tmp_path / "13", CUPY13_CARRAY))
    assert not needs_float16_header(tmp_path / "no-cupy")


def test_chainermn_packing_kernels_include_cupy_float16_header_on_cupy_14(tmp_path, chainer_python):
    """ChainerMN's own kernel sources: unchanged for CuPy 13's headers; for CuPy 14's, the same
    source with the include that defines `half`, same name and options, the factories wrapped once."""
    cupy13 = cupy_headers(tmp_path / "13", CUPY13_CARRAY)
    cupy14 = cupy_headers(tmp_path / "14", CUPY14_CARRAY)
    result = json.loads(run_in(chainer_python, PACKING_KERNEL_SOURCES, str(cupy13), str(cupy14)))
    assert result["untouched"] == []
    assert result["patched"] == ["chainermn packing kernels include cupy/float16.cuh"] * 2
    assert result["wrapped_once"] == [True, True]
    for name, (code, kernel_name, options, backend) in result["kernels"].items():
        original = result["original"][name]
        assert "(half*)" in original and original.count(CARRAY_INCLUDE) == 1
        assert code == original.replace(CARRAY_INCLUDE, FLOAT16_INCLUDE)
        assert (kernel_name, options, backend) == (name.lstrip("_"), [], "nvrtc")


def test_chainermn_packing_kernels_round_trip_through_float16_on_gpu(chainer_gpu_python):
    """fp32 gradients packed into an fp16 buffer and unpacked again (the `half` casts both ways)."""
    result = json.loads(run_in(chainer_gpu_python, PACKING_ROUND_TRIP_ON_GPU))
    assert result["packed"] == result["expected"] == result["unpacked"]
    assert len(result["expected"]) == 5 * 3 + 5


@pytest.mark.slow
def test_one_epoch_of_the_sample_through_chainers_loader_on_two_processes(chainer_python, tmp_path):
    sample = tmp_path / "sample"
    assert mgbench("make-sample-chestxray", str(sample), "--n", "64", "--size", "38").returncode == 0
    rows = one_epoch_rows("chainer", "chainermn", sample, tmp_path / "run")
    assert all(row["interpreter"] == chainer_python for row in rows)


SGD_STEPS = """
import json, sys
import numpy as np
from mgbench.frameworks.chainer import compat
compat.apply()
import chainer, chainermn
from mgbench.frameworks.chainer.optimizer import TorchFormSGD
device, form, nesterov, weight_decay, rates, start, gradients = json.loads(sys.argv[1])
device = chainer.get_device(device)
device.use()
link = chainer.Link()
with link.init_scope():
    link.w = chainer.Parameter(np.array(start, dtype=np.float32))
link.to_device(device)
if form == "torch":
    sgd = TorchFormSGD(rates[0], 0.9, nesterov=nesterov, weight_decay=weight_decay)
else:
    sgd = chainer.optimizers.MomentumSGD(rates[0], 0.9)
optimizer = chainermn.create_multi_node_optimizer(sgd, chainermn.create_communicator("naive"))
optimizer.setup(link)
optimizer.is_changed(link)  # as the adapter does: its first update then steps
weights = []
for rate, gradient in zip(rates, gradients):
    optimizer.lr = rate  # through ChainerMN's wrapper, as the adapter's set_learning_rate
    link.w.grad = device.send(np.array(gradient, dtype=np.float32))
    optimizer.update()
    weights.append(chainer.get_device("@numpy").send(link.w.array).tolist())
print(json.dumps(weights))
"""


def sgd_weights(python: str, device: str, form: str, nesterov: bool = False, weight_decay: float = 0.0) -> np.ndarray:
    """The weight after each of `RATES`' steps from `START` with `GRADIENTS`, momentum 0.9."""
    setting = [device, form, nesterov, weight_decay, RATES, START.tolist(), GRADIENTS.tolist()]
    return np.array(json.loads(run_in(python, SGD_STEPS, json.dumps(setting))))


def torch_form(nesterov: bool = False, weight_decay: float = 0.0) -> np.ndarray:
    """torch.optim.SGD's steps (no dampening) in float64: b = m b + (g + wd w); w -= lr b
    (Nesterov: w -= lr (g + wd w + m b))."""
    w, buffer, weights = START.astype(np.float64), np.zeros(3), []
    for rate, gradient in zip(RATES, GRADIENTS):
        g = gradient + weight_decay * w
        buffer = 0.9 * buffer + g
        w = w - rate * (g + 0.9 * buffer if nesterov else buffer)
        weights.append(w)
    return np.array(weights)


@pytest.mark.parametrize(("nesterov", "weight_decay"), [(False, 0.0), (True, 0.0), (False, 0.01)])
def test_sgd_steps_in_torchs_form_with_the_rate_changed_every_step(chainer_python, nesterov, weight_decay):
    found = sgd_weights(chainer_python, "@numpy", "torch", nesterov, weight_decay)
    np.testing.assert_allclose(found, torch_form(nesterov, weight_decay), rtol=0, atol=1e-6)


def test_chainers_own_momentum_sgd_steps_otherwise_once_the_rate_changes(chainer_python):
    """Chainer's MomentumSGD (v = m v - lr g; w += v) takes torch's first step, then others."""
    own = sgd_weights(chainer_python, "@numpy", "chainer")
    np.testing.assert_allclose(own[0], torch_form()[0], rtol=0, atol=1e-6)
    assert np.abs(own[1:] - torch_form()[1:]).min() > 1e-3


def test_sgd_steps_in_torchs_form_on_gpu(chainer_gpu_python):
    found = sgd_weights(chainer_gpu_python, "@cupy:0", "torch", True, 0.01)
    np.testing.assert_allclose(found, torch_form(True, 0.01), rtol=0, atol=1e-6)


LOADER_MATCHES_THE_SHARED_READER = """
import json, sys
import numpy as np
from mgbench.core.config import RunConfig
from mgbench.datasets.augment import Augmentation
from mgbench.datasets.sampling import epoch_batches
from mgbench.datasets.synthetic import Shard
from mgbench.frameworks.chainer.adapter import create_adapter
config = RunConfig.flat(framework="chainer", strategy="chainermn", model="tiny", devices=1, device_kind="cpu",
                   batch_per_device=8, steps=1, dataset="chestxray:" + sys.argv[1], epochs=1, image_size=32, workers=2)
adapter = create_adapter("chainermn")
adapter.setup(config)
train, augmentation = adapter.dataset.train, Augmentation.for_input(32)
for epoch in (0, 1):
    expected = epoch_batches(len(train), 8, Shard(0, 8), epoch, config.job.seed)
    batches = list(adapter.epoch_batches(epoch))
    assert len(batches) == adapter.steps_per_epoch() == len(expected)
    for (images, labels), indices in zip(batches, expected):
        pixels = np.stack([augmentation.train(train.files[i], config.job.seed, epoch, i) for i in indices])
        assert np.array_equal(images, pixels) and np.array_equal(labels, train.targets[indices].astype(np.int32))
print(json.dumps({"val": adapter.evaluate("val"), "test": adapter.evaluate("test")}))
"""


def test_loader_reads_the_shared_shards_and_scores_both_held_out_splits(chainer_python, tmp_path):
    """One process (MPI singleton): the MultiprocessIterator's batches are the shared reader's
    images and labels, epoch by epoch (the cut of the scattered keys per rank is
    test_datasets' `rank_major_keys` test)."""
    sample = tmp_path / "sample"
    assert mgbench("make-sample-chestxray", str(sample), "--n", "64", "--size", "38").returncode == 0
    found = json.loads(run_in(chainer_python, LOADER_MATCHES_THE_SHARED_READER, str(sample)))
    for split in ("val", "test"):
        assert set(found[split]) == {"loss", "auc"} and 0 <= found[split]["auc"] <= 1
    assert found["val"] != found["test"]
