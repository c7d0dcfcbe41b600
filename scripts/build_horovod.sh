#!/usr/bin/env bash
# Build and install Horovod into a framework environment: `scripts/build_horovod.sh PYTHON`.
#
# Why a build: Horovod 0.28.1 (the last release) is an sdist only on PyPI. Built as-is against
# torch 2.14 it fails, because torch's headers need C++20 and Horovod's CMake asks for C++14,
# and because a CUDA build of torch makes it require the CUDA toolkit even for a CPU-only build.
# patches/horovod-0.28.1-torch2.patch fixes both (C++20 for the torch extension, C++17 for the
# bundled gloo so both link; HOROVOD_WITHOUT_GPU=1 builds against a CUDA torch without the
# toolkit). It is built with --no-build-isolation, against the torch
# already installed in PYTHON's environment, because its C++ extension links to that torch.
#
# The wheel is cached under $MGBENCH_WHEELHOUSE (default ~/.cache/mgbench/wheels) in a folder
# named by Horovod's version, the torch version, the build flavour and the patch's hash, so a
# second set-up installs it in seconds; delete the folder to force a rebuild.
#
# Flavour: CPU (gloo) by default. HOROVOD_GPU_OPERATIONS=NCCL in the environment builds the GPU
# flavour instead (needs the CUDA toolkit and NCCL; see README).
set -euo pipefail

python=${1:?usage: build_horovod.sh PYTHON}
version=0.28.1
root=$(cd "$(dirname "$0")/.." && pwd)
patch_file="$root/patches/horovod-$version-torch2.patch"
wheelhouse=${MGBENCH_WHEELHOUSE:-$HOME/.cache/mgbench/wheels}

torch_version=$("$python" -c 'import torch; print(torch.__version__)')
flavour=cpu
if [[ -n "${HOROVOD_GPU_OPERATIONS:-}" ]]; then
    flavour=$(echo "$HOROVOD_GPU_OPERATIONS" | tr '[:upper:]' '[:lower:]')
fi
patch_hash=$(sha256sum "$patch_file" | cut -c1-12)
cache="$wheelhouse/horovod-$version-torch$torch_version-$flavour-$patch_hash"

if ! compgen -G "$cache/horovod-*.whl" >/dev/null; then
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    "$python" -m pip download --quiet --no-deps --no-binary :all: "horovod==$version" -d "$work"
    tar -xzf "$work/horovod-$version.tar.gz" -C "$work"
    patch -d "$work/horovod-$version" -p1 --forward <"$patch_file"
    export HOROVOD_WITH_PYTORCH=1 HOROVOD_WITH_GLOO=1 HOROVOD_WITHOUT_MPI=1
    export HOROVOD_WITHOUT_TENSORFLOW=1 HOROVOD_WITHOUT_MXNET=1
    if [[ $flavour == cpu ]]; then
        export HOROVOD_WITHOUT_GPU=1
    fi
    # Horovod's setup.py runs `make -j8` unless MAKEFLAGS is set: one job per core instead.
    export MAKEFLAGS=${MAKEFLAGS:--j$(nproc)}
    started=$SECONDS
    "$python" -m pip wheel --no-build-isolation --no-deps "$work/horovod-$version" -w "$work/wheel"
    mkdir -p "$cache"
    mv "$work"/wheel/horovod-*.whl "$cache/"
    echo "horovod $version built in $((SECONDS - started)) s; wheel cached in $cache" >&2
fi
"$python" -m pip install --no-deps "$cache"/horovod-*.whl
