"""Chainer adapter: ChainerMN under mpiexec in its own environment (`make env-chainer`).

The equivalence test runs `mgbench run` as users do: one step on 2 MPI processes (naive
communicator) with global batch B leaves the same weights as 1 process on B. The numpy-2
compatibility layer is checked on this interpreter's numpy (outside Chainer), and with Chainer
itself where an interpreter with numpy 2 and Chainer is named in MGBENCH_CHAINER_NUMPY2_PYTHON.
"""

import json
import os
import sys

import numpy as np
import pytest

from conftest import assert_two_devices_equal_one, framework_python, run_in

EXPECTED_PARAMETERS = {"densenet121": 6_968_206, "resnet50": 25_557_032, "tiny": 5_418}

PARAMETER_COUNTS = """
import json
import numpy as np
from mgbench.common.models import MODELS
from mgbench.frameworks.chainer.models import build_model, parameter_count
counts = {}
for name in %r:
    model = build_model(MODELS[name])
    outputs = model(np.zeros((1, 3, 64, 64), dtype=np.float32))
    assert outputs.shape == (1, MODELS[name].num_classes)
    counts[name] = parameter_count(model)
print(json.dumps(counts))
"""

COMPAT_WITHOUT_DISTUTILS = """
import json, sys
sys.modules["numpy.distutils"] = None  # as on Python >= 3.12, where numpy 2 has no numpy.distutils
import numpy as np
from mgbench.frameworks.chainer.compat import apply
patched = apply()
import numpy.distutils.system_info as system_info
print(json.dumps({"patched": patched, "int": [t.__name__ for t in np.sctypes["int"]],
                  "float_is_builtin": np.float is float, "blas": system_info.get_info("blas_opt")}))
"""

CHAINER_ON_NUMPY2 = """
import json
from mgbench.frameworks.chainer import compat as chainer_compat
patched = chainer_compat.apply()
import chainer.functions as F
import numpy as np
from mgbench.common.models import MODELS
from mgbench.frameworks.chainer.models import build_model
model = build_model(MODELS["tiny"])
loss = F.softmax_cross_entropy(model(np.ones((2, 3, 32, 32), np.float32)), np.array([1, 2], np.int32))
loss.backward()
resized = F.resize_images(np.ones((1, 3, 4, 4), np.float32), (8, 8))
strided = F.as_strided(np.arange(6, dtype=np.float32), (2, 2), (1, 1))
print(json.dumps({"numpy": np.__version__, "patched": patched, "loss": float(loss.array),
                  "shapes": [list(resized.shape), list(strided.shape)]}))
"""


@pytest.fixture(scope="module")
def chainer_python():
    return framework_python("chainer")


def test_parameter_counts_equal_torchvision(chainer_python):
    counts = json.loads(run_in(chainer_python, PARAMETER_COUNTS % (sorted(EXPECTED_PARAMETERS),)))
    assert counts == EXPECTED_PARAMETERS


@pytest.mark.slow
def test_two_mpi_processes_equal_one_process_on_the_same_global_batch(tmp_path, chainer_python):
    assert_two_devices_equal_one(tmp_path, "chainer", "chainermn", 1e-5)


@pytest.mark.skipif(int(np.__version__.split(".")[0]) < 2, reason="the compatibility layer acts on numpy >= 2 only")
def test_compat_layer_restores_what_chainer_needs_from_numpy_1():
    result = json.loads(run_in(sys.executable, COMPAT_WITHOUT_DISTUTILS))
    assert result == {
        "patched": ["numpy.sctypes", "numpy.distutils", "numpy.float"],
        "int": ["int8", "int16", "int32", "int64"],
        "float_is_builtin": True,
        "blas": {},
    }


def test_compat_layer_changes_nothing_on_numpy_1(chainer_python):
    assert json.loads(run_in(chainer_python, "from mgbench.frameworks.chainer.compat import apply; print(apply())")) == []


def test_chainer_trains_on_numpy_2_with_the_compat_layer():
    python = os.environ.get("MGBENCH_CHAINER_NUMPY2_PYTHON")
    if not python:
        pytest.skip("set MGBENCH_CHAINER_NUMPY2_PYTHON to an interpreter with numpy 2 and Chainer (pip install --no-deps chainer)")
    result = json.loads(run_in(python, CHAINER_ON_NUMPY2))
    assert int(result["numpy"].split(".")[0]) >= 2
    assert "numpy.sctypes" in result["patched"] and "numpy.float" in result["patched"]
    assert result["loss"] > 0
    assert result["shapes"] == [[1, 3, 8, 8], [2, 2]]
