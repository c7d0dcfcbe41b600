"""Lets Chainer 7.8.1 import and train on numpy 2, for GPU stacks whose CuPy needs numpy 2.

Chainer 7.8.1 is the last release. On the project's GPU machines CuPy 14 requires numpy 2,
and numpy 2 removed three things Chainer touches:

- `numpy.sctypes` (read at import by `chainer.functions.array.as_strided`): restored with the
  same lists of scalar types numpy 1.x had.
- `numpy.distutils` (imported by `chainer._environment_check` only to look for Apple's
  Accelerate BLAS on macOS): a stub `numpy.distutils.system_info` whose `get_info` finds nothing.
- `numpy.float` (used as a dtype by `chainer.functions.resize_images`): restored as the builtin
  `float`, which is exactly what the numpy 1.x alias was.

`apply()` must run before the first `import chainer`; on numpy < 2 it changes nothing. CuPy 14
also has no `cupy.cudnn` module, which Chainer tolerates by running without cuDNN (its own
`chainer.backends.cuda.cudnn_enabled` is then False); the adapter reports that.
"""

from __future__ import annotations

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


def apply() -> list[str]:
    """Restore what Chainer needs from numpy 1.x; returns what was patched (empty on numpy < 2)."""
    if not NUMPY_2:
        return []
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
