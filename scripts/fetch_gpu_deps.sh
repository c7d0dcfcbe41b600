#!/usr/bin/env bash
# Fill the folder carried to the GPU machine (default .whl, git-ignored; benchmarks/gpu_env.sh
# installs its wheels there) for benchmarks/gpu_horovod.sh and benchmarks/gpu_chainer.sh:
# `scripts/fetch_gpu_deps.sh [DIR]`.
#
# That machine has no network and runs the image's Python 3.12: the wheels of
# requirements/gpu-carry.txt for CPython 3.12 on x86_64 Linux, Horovod 0.28.1's sdist (built
# there, against the image's torch, by scripts/build_horovod.sh) and a Chainer 7.8.1 wheel built
# here (pure Python; PyPI has only its sdist, whose build needs setuptools < 74).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/.whl}
mkdir -p "$dir"
python=${PYTHON:-python3}

"$python" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -r "$root/requirements/gpu-carry.txt" -d "$dir"
"$python" -m pip download --quiet --no-deps --no-binary :all: horovod==0.28.1 -d "$dir"
"$python" -m pip download --quiet --no-deps --no-binary :all: -r "$root/requirements/pillow-simd.txt" -d "$dir"
PIP_CONSTRAINT="$root/requirements/chainer-build-constraints.txt" \
PIP_BUILD_CONSTRAINT="$root/requirements/chainer-build-constraints.txt" \
    "$python" -m pip wheel --quiet --no-deps chainer==7.8.1 -w "$dir"
# timm's training benchmark (benchmark.py, in its repository but not in its wheel or sdist), run
# unchanged by benchmarks/gpu_vit.sh beside mgbench's ViT-B/16 rows; its tag near the image's timm.
curl -fsSL "https://raw.githubusercontent.com/huggingface/pytorch-image-models/${TIMM_TAG:-v1.0.28}/benchmark.py" \
    -o "$dir/timm_benchmark.py" || echo "timm's benchmark.py not fetched: benchmarks/gpu_vit.sh leaves out timm's rows"
du -ch "$dir"/*.whl "$dir"/*.tar.gz | tail -1
