"""Lets ChainerMN's `pure_nccl` communicator compile its gradient-packing kernels on CuPy 14.

ChainerMN 7.8.1 packs every gradient into one buffer before NCCL's all-reduce, and unpacks the
result, with two raw CUDA kernels (`chainermn.communicators._memory_utility`). Their source
includes only `<cupy/carray.cuh>` and casts through CUDA's `half` type. Up to CuPy 13,
carray.cuh included `<cuda_fp16.h>`, which defines `half`; CuPy 14 moved that include to
`<cupy/float16.cuh>` (and added it to its own kernels that need it), so the kernels fail to
compile (`expected an expression` at `(half*)`) on the first update.

`apply()` does what CuPy 14 did to its own kernels: the two kernel factories are wrapped so the
source includes `<cupy/float16.cuh>` (which includes carray.cuh and cuda_fp16.h) instead. It
acts only when the installed CuPy's carray.cuh no longer includes cuda_fp16.h, and changes
nothing else in the kernels: the same casts, the same launch, ChainerMN's batched copy kept.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

CARRAY_INCLUDE = "#include <cupy/carray.cuh>"
FLOAT16_INCLUDE = "#include <cupy/float16.cuh>"
PACKING_KERNELS = ("_cupy_batched_pack_params", "_cupy_batched_unpack_params")
"""The factories in chainermn.communicators._memory_utility that build the two kernels."""
PATCHED = "chainermn packing kernels include cupy/float16.cuh"


def cupy_include_dir() -> Path | None:
    """CuPy's kernel headers (`.../cupy/_core/include`), found without importing CuPy; None without CuPy."""
    spec = importlib.util.find_spec("cupy")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0]) / "_core" / "include"


def needs_float16_header(include_dir: Path) -> bool:
    """Whether a kernel including only carray.cuh lacks CUDA's `half` while float16.cuh provides
    it (CuPy 14); False for CuPy <= 13, and where the headers are not where CuPy keeps them."""
    carray = include_dir / "cupy" / "carray.cuh"
    if not carray.is_file() or not (include_dir / "cupy" / "float16.cuh").is_file():
        return False
    return "cuda_fp16.h" not in carray.read_text()


def with_float16_header(code: str) -> str:
    """The kernel source including CuPy's float16 header (and through it cuda_fp16.h's `half`)."""
    return code.replace(CARRAY_INCLUDE, FLOAT16_INCLUDE)


def _float16_kernel(factory: Callable[[], Any]) -> Callable[[], Any]:
    """`factory`'s kernel rebuilt from the fixed source; chainer's `raw` memoizes it like the original."""

    @functools.wraps(factory)
    def build() -> Any:
        import chainer.backends.cuda

        kernel = factory()
        return chainer.backends.cuda.raw(
            with_float16_header(kernel.code), kernel.name, options=kernel.options, backend=kernel.backend
        )

    return build


def apply(include_dir: Path | None = None) -> list[str]:
    """Fix ChainerMN's packing kernels where CuPy's carray.cuh lacks `half`; returns what was patched.

    `include_dir` defaults to the installed CuPy's; without CuPy (CPU runs) nothing is patched.
    Applying twice patches once.
    """
    include_dir = include_dir or cupy_include_dir()
    if include_dir is None or not needs_float16_header(include_dir):
        return []
    from chainermn.communicators import _memory_utility

    for name in PACKING_KERNELS:
        factory = getattr(_memory_utility, name)
        if not hasattr(factory, "__wrapped__"):
            setattr(_memory_utility, name, _float16_kernel(factory))
    return [PATCHED]
