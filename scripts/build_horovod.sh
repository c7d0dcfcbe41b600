#!/usr/bin/env bash
# Build and install Horovod against PYTHON's torch: `scripts/build_horovod.sh PYTHON [TARGET]`.
#
# Why a build: Horovod 0.28.1 (the last release) is an sdist only on PyPI. Built as-is against
# torch 2.x it fails, because torch's headers need C++20 and Horovod's CMake asks for C++14,
# and because a CUDA build of torch makes it require the CUDA toolkit even for a CPU-only build;
# newer GCCs and Python 3.12 break it too. patches/horovod-0.28.1-torch2.patch fixes these (its
# header says how). It is built with --no-build-isolation, against the torch already installed
# for PYTHON, because its C++ extension links to that torch: Horovod's build requirements
# (requirements/horovod.txt, cffi among them) must be importable by PYTHON.
#
# The sdist: $HOROVOD_SDIST if set, else horovod-0.28.1.tar.gz found in .whl/ (the folder carried
# to the GPU machine, which has no network) or .wheelhouse/ of this checkout, else downloaded.
#
# The wheel is cached under $MGBENCH_WHEELHOUSE (default ~/.cache/mgbench/wheels) in a folder
# named by Horovod's version, the torch version, the build flavour and the patch's hash, so a
# second set-up installs it in seconds; delete the folder to force a rebuild.
#
# Flavour: CPU (gloo) by default. HOROVOD_GPU_OPERATIONS=NCCL builds the GPU flavour: nvcc from
# $HOROVOD_CUDA_HOME (default /usr/local/cuda), compute capabilities $HOROVOD_BUILD_CUDA_CC_LIST
# (e.g. 90; default: every one nvcc knows), NCCL from $HOROVOD_NCCL_INCLUDE / $HOROVOD_NCCL_LIB,
# by default the nvidia/nccl folder of the NCCL wheel CUDA builds of torch depend on.
#
# TARGET: install into that folder (`pip install --target`, for a PYTHONPATH entry) instead of
# PYTHON's environment, where that environment is not ours to change.
set -euo pipefail

python=${1:?usage: build_horovod.sh PYTHON [TARGET]}
target=${2:-}
version=0.28.1
root=$(cd "$(dirname "$0")/.." && pwd)
patch_file="$root/patches/horovod-$version-torch2.patch"
wheelhouse=${MGBENCH_WHEELHOUSE:-$HOME/.cache/mgbench/wheels}

torch_version=$("$python" -c 'import torch; print(torch.__version__)')
flavour=cpu
if [[ -n "${HOROVOD_GPU_OPERATIONS:-}" ]]; then
    flavour=$(echo "$HOROVOD_GPU_OPERATIONS" | tr '[:upper:]' '[:lower:]')${HOROVOD_BUILD_CUDA_CC_LIST:+-cc${HOROVOD_BUILD_CUDA_CC_LIST//,/-}}
fi
patch_hash=$(sha256sum "$patch_file" | cut -c1-12)
cache="$wheelhouse/horovod-$version-torch$torch_version-$flavour-$patch_hash"

# NCCL's wheel has only libnccl.so.2, and Horovod's CMake looks for libnccl.so: a folder with
# that name linked to it. Linking records the soname, which torch has loaded before Horovod.
nccl_defaults() {
    export HOROVOD_NCCL_LINK=SHARED
    if [[ -n "${HOROVOD_NCCL_INCLUDE:-}" && -n "${HOROVOD_NCCL_LIB:-}" ]]; then
        return
    fi
    local nccl
    nccl=$("$python" -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])')
    export HOROVOD_NCCL_INCLUDE=${HOROVOD_NCCL_INCLUDE:-$nccl/include}
    if [[ -z "${HOROVOD_NCCL_LIB:-}" && ! -e "$nccl/lib/libnccl.so" ]]; then
        mkdir -p "$work/nccl-lib"
        ln -s "$nccl/lib/libnccl.so.2" "$work/nccl-lib/libnccl.so"
        export HOROVOD_NCCL_LIB=$work/nccl-lib
    fi
    export HOROVOD_NCCL_LIB=${HOROVOD_NCCL_LIB:-$nccl/lib}
}

local_sdist() {
    local candidate
    for candidate in "${HOROVOD_SDIST:-}" "$root/.whl/horovod-$version.tar.gz" \
        "$root/.wheelhouse/horovod-$version.tar.gz"; do
        if [[ -f "$candidate" ]]; then
            echo "$candidate"
            return
        fi
    done
}

if ! compgen -G "$cache/horovod-*.whl" >/dev/null; then
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    sdist=$(local_sdist)
    if [[ -z "$sdist" ]]; then
        "$python" -m pip download --quiet --no-deps --no-binary :all: "horovod==$version" -d "$work"
        sdist="$work/horovod-$version.tar.gz"
    fi
    tar -xzf "$sdist" -C "$work"
    patch -d "$work/horovod-$version" -p1 --forward <"$patch_file"
    export HOROVOD_WITH_PYTORCH=1 HOROVOD_WITH_GLOO=1 HOROVOD_WITHOUT_MPI=1
    export HOROVOD_WITHOUT_TENSORFLOW=1 HOROVOD_WITHOUT_MXNET=1
    # CMake 4 (the GPU image has it) refuses the bundled gloo's cmake_minimum_required(2.8).
    export CMAKE_POLICY_VERSION_MINIMUM=3.5
    if [[ $flavour == cpu ]]; then
        export HOROVOD_WITHOUT_GPU=1
    else
        unset HOROVOD_WITHOUT_GPU
        # torch's extension helper finds cudart under CUDA_HOME; without it, it guesses from nvcc's path.
        export HOROVOD_CUDA_HOME=${HOROVOD_CUDA_HOME:-/usr/local/cuda}
        export CUDA_HOME=${CUDA_HOME:-$HOROVOD_CUDA_HOME}
    fi
    if [[ $flavour == nccl* ]]; then
        nccl_defaults
    fi
    # Horovod's setup.py runs `make -j8` unless MAKEFLAGS is set: one job per core instead.
    export MAKEFLAGS=${MAKEFLAGS:--j$(nproc)}
    started=$SECONDS
    "$python" -m pip wheel --no-build-isolation --no-deps "$work/horovod-$version" -w "$work/wheel"
    mkdir -p "$cache"
    mv "$work"/wheel/horovod-*.whl "$cache/"
    echo "horovod $version ($flavour) built from $sdist in $((SECONDS - started)) s; wheel cached in $cache" >&2
fi
# Reinstalled even where the same version is there: it may be a build of another patch or flavour.
if [[ -n "$target" ]]; then
    "$python" -m pip install --no-deps --no-index --upgrade --target "$target" "$cache"/horovod-*.whl
else
    "$python" -m pip install --no-deps --force-reinstall "$cache"/horovod-*.whl
fi
