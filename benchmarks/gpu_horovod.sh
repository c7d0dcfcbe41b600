#!/usr/bin/env bash
# Horovod (NCCL) against PyTorch DDP on every GPU of the GPU machine, from the repo root with
# .whl/ carried (scripts/fetch_gpu_deps.sh fills it); writes under $OUT.
#
# The image has torch, nvcc (/usr/local/cuda), CMake and NCCL's wheel, but no Horovod, no cffi
# and no network: benchmarks/gpu_env.sh installs the carried wheels into /tmp/site, then
# Horovod's NCCL flavour is built from the carried sdist against the image's torch
# (scripts/build_horovod.sh, sm_90 only; log in $OUT/horovod-build.log) and installed there too.
# The wheel is cached in .wheelhouse/, which the machine keeps between runs (it is too large
# to come back through $OUT). Then the N-GPU equivalence test (GPU_TESTS=0 skips it) and, per
# model, one compare of horovod and pytorch (their default strategies: hvd and ddp) on 1 and N
# GPUs: bf16, channels_last, 128 images per GPU. Scale with MODELS, STEPS, BATCH.
set -uo pipefail
source benchmarks/gpu_env.sh
N=$(python3 -c 'import torch; print(torch.cuda.device_count())')
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())'

if ! MGBENCH_WHEELHOUSE=$PWD/.wheelhouse HOROVOD_GPU_OPERATIONS=NCCL HOROVOD_BUILD_CUDA_CC_LIST=${HOROVOD_BUILD_CUDA_CC_LIST:-90} \
    bash scripts/build_horovod.sh python3 /tmp/site >"$OUT/horovod-build.log" 2>&1; then
  tail -40 "$OUT/horovod-build.log"
  exit 1
fi
grep -h "built from" "$OUT/horovod-build.log"
python3 -c 'import horovod, horovod.torch as hvd; print("horovod", horovod.__version__, "nccl", hvd.nccl_built())' || exit 1

[ "${GPU_TESTS:-1}" = 0 ] || python3 -m pytest -q -rs -p no:cacheprovider tests/test_gpu_data_parallel.py -k horovod 2>&1 | tail -4
for model in ${MODELS:-resnet50 densenet121}; do
  rm -rf runs/horovod-$model
  python3 -m mgbench compare --frameworks horovod,pytorch --gpus 1,"$N" --model "$model" --precision bf16 \
    --data-format channels_last --batch-per-gpu "${BATCH:-128}" --steps "${STEPS:-40}" --out runs/horovod-$model 2>&1 \
    | grep -E "│ (horovod|pytorch)|rror"
  tar czf "$OUT/horovod-$model.tgz" --exclude="*-trace.json" runs/horovod-$model
done
