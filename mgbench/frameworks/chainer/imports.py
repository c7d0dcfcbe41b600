"""Chainer for this package, imported once it can be: every module here takes `chainer`, its
`functions` (F), `links` (L), `initializers`, `optimizer` and `chainermn` from this one, so the
compat patches (`compat.apply`: Chainer 7.8.1 on numpy 2) run before the first import of Chainer,
whichever of the package's modules is imported first.

The modules are loaded by `importlib` once the patches are applied, so no import statement
stands below code in any module of the package.
"""

from __future__ import annotations

import importlib

from mgbench.frameworks.chainer.compat import apply

NUMPY_PATCHES = apply()
"""What `compat.apply` restored (empty on numpy < 2 with `pkg_resources` present), which the
adapter reports."""

chainer = importlib.import_module("chainer")
F = importlib.import_module("chainer.functions")
L = importlib.import_module("chainer.links")
initializers = importlib.import_module("chainer.initializers")
optimizer = importlib.import_module("chainer.optimizer")
chainermn = importlib.import_module("chainermn")
