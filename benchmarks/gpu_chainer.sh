#!/usr/bin/env bash
# Chainer (ChainerMN, pure_nccl) on every GPU of the GPU machine, from the repo root with
# .whl/ carried (scripts/fetch_gpu_deps.sh fills it); writes under $OUT.
#
# The image has CuPy 14, numpy 2, mpi4py and Open MPI but no Chainer: benchmarks/gpu_env.sh
# installs the carried Chainer wheel into /tmp/site; mgbench's compat layers let Chainer 7.8.1
# import on numpy 2 and ChainerMN's packing kernels compile on CuPy 14. First the GPU tests
# (tests/test_chainer.py's fp16 packing round trip; tests/test_gpu_data_parallel.py's N GPUs
# equal 1; GPU_TESTS=0 skips them), then
# per model `chainermn` on 1 and N GPUs: fp32 and channels_first (all Chainer trains), 128
# images per GPU. Scale with MODELS, STEPS, BATCH.
set -uo pipefail
source benchmarks/gpu_env.sh
N=$(nvidia-smi --list-gpus | wc -l)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c 'import cupy, numpy, mpi4py; from cupy.cuda import nccl; print("cupy", cupy.__version__, "numpy", numpy.__version__, "mpi4py", mpi4py.__version__, "nccl", nccl.get_version())'
mpiexec --version | head -1

[ "${GPU_TESTS:-1}" = 0 ] || {
  python3 -m pytest -q -rs -p no:cacheprovider tests/test_chainer.py -k packing 2>&1 | tail -3
  python3 -m pytest -q -rs -p no:cacheprovider tests/test_gpu_data_parallel.py -k chainer 2>&1 | tail -3
}
for model in ${MODELS:-resnet50 densenet121}; do
  rm -rf runs/chainer-$model
  python3 -m mgbench compare --frameworks chainer --gpus 1,"$N" --model "$model" --precision fp32 \
    --data-format channels_first --batch-per-gpu "${BATCH:-128}" --steps "${STEPS:-30}" --out runs/chainer-$model 2>&1 \
    | grep -E "│ chainer|rror"
  tar czf "$OUT/chainer-$model.tgz" runs/chainer-$model
done
