"""Lets Chainer 7.8.1 import and train on numpy 2, for GPU stacks whose CuPy needs numpy 2.

Chainer 7.8.1 is the last release. On the project's GPU machines CuPy 14 requires numpy 2,
and numpy 2 removed three things Chainer touches:

- `numpy.sctypes` (read at import by `chainer.functions.array.as_strided`): restored with the
  same lists of scalar types numpy 1.x had.
- `numpy.distutils` (imported by `chainer._environment_check` only to look for Apple's
  Accelerate BLAS on macOS): a stub `numpy.distutils.system_info` whose `get_info` finds nothing.
- `numpy.float` (used as a dtype by `chainer.functions.resize_images`): restored as the builtin
  `float`, which is exactly what the numpy 1.x alias was.

Such stacks may also have a setuptools that no longer ships `pkg_resources`, which
`chainer._environment_check` imports to warn when an optional package (CuPy, iDeep) has a
version Chainer 7.8.1 does not list: where it is missing, a stub whose `require` finds nothing
takes its place, so that check (a warning only) is skipped.

`apply()` must run before the first `import chainer`; on numpy < 2 with `pkg_resources` present
it changes nothing. CuPy 14 also has no `cupy.cudnn` module, which Chainer tolerates by running
without cuDNN (its own `chainer.backends.cuda.cudnn_enabled` is then False); the adapter reports
that.
"""

from __future__ import annotations

import importlib.util
import sys
import types

import numpy as np

NUMPY_2 = int(np.__version__.split(".")[0]) >= 2

SCTYPES: dict[str, list[type]] = {
    "int": [np.int8, np.int16, np.int32, np.int64],
    "uint": [np.uint8, np.uint16, np.uint32, np.uint64],
    "float": [np.float16, np.float32, np.float64, np.longdouble],
    "complex": [np.complex64, np.complex128, np.clongdouble],
    "others": [bool, object, bytes, str, np.void],
}


def _distutils_stub() -> types.ModuleType:
    distutils = types.ModuleType("numpy.distutils")
    system_info = types.ModuleType("numpy.distutils.system_info")
    system_info.get_info = lambda name, notfound_action=0: {}
    distutils.system_info = system_info
    sys.modules["numpy.distutils"] = distutils
    sys.modules["numpy.distutils.system_info"] = system_info
    return distutils


class DistributionNotFound(Exception):
    """The stub `pkg_resources.DistributionNotFound`: every requirement raises it."""


class VersionConflict(Exception):
    """The stub `pkg_resources.VersionConflict`, which Chainer catches; never raised."""


def _require(requirement: str) -> None:
    raise DistributionNotFound(requirement)


def _pkg_resources_stub() -> types.ModuleType:
    stub = types.ModuleType("pkg_resources")
    stub.require = _require
    stub.DistributionNotFound = DistributionNotFound
    stub.VersionConflict = VersionConflict
    sys.modules["pkg_resources"] = stub
    return stub


def apply() -> list[str]:
    """Restore what Chainer needs from numpy 1.x and an older setuptools; returns what was patched
    (empty on numpy < 2 with `pkg_resources` present)."""
    patched = _restore_numpy() if NUMPY_2 else []
    if sys.modules.get("pkg_resources") is None and importlib.util.find_spec("pkg_resources") is None:
        _pkg_resources_stub()
        patched.append("pkg_resources")
    return patched


def _restore_numpy() -> list[str]:
    patched = []
    if "sctypes" not in np.__dict__:
        np.sctypes = SCTYPES
        patched.append("numpy.sctypes")
    try:
        import numpy.distutils.system_info  # noqa: F401  (present on some numpy 2 / Python < 3.12)
    except ImportError:
        np.distutils = _distutils_stub()
        patched.append("numpy.distutils")
    if "float" not in np.__dict__:
        np.float = float
        patched.append("numpy.float")
    return patched
