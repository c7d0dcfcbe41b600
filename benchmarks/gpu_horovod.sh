#!/usr/bin/env bash
# Horovod (NCCL) against PyTorch DDP on every GPU of the device machine, from the repo root with
# .deps/gpu carried (scripts/fetch_gpu_deps.sh); writes under $OUT.
#
# The image has torch, nvcc (/usr/local/cuda), CMake and NCCL's wheel, but no Horovod, no cffi
# and no network: the carried wheels go to /tmp/site (benchmarks/carried_wheels.sh), then
# Horovod's NCCL flavour is built from the carried sdist against the image's torch
# (scripts/build_horovod.sh, sm_90 only; log in $OUT/horovod-build.log) and installed there too.
# The wheel is cached in .wheelhouse/, which a warm machine keeps between calls (it is too large
# to come back through $OUT). Then the 2-GPU equivalence test (GPU_TESTS=0 skips it) and, per
# model, `hvd` and `ddp` on 1 and N GPUs: bf16, channels_last, 128 images per GPU, one run folder
# per framework (`--strategies` names strategies of every framework it is given). Scale with
# MODELS, STEPS, BATCH.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
source benchmarks/carried_wheels.sh
N=$(python3 -c 'import torch; print(torch.cuda.device_count())')
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())'

if ! MGBENCH_WHEELHOUSE=$PWD/.wheelhouse HOROVOD_GPU_OPERATIONS=NCCL HOROVOD_BUILD_CUDA_CC_LIST=${HOROVOD_BUILD_CUDA_CC_LIST:-90} \
    bash scripts/build_horovod.sh python3 "$SITE" >"$OUT/horovod-build.log" 2>&1; then
  tail -40 "$OUT/horovod-build.log"
  exit 1
fi
grep -h "built from" "$OUT/horovod-build.log"
python3 -c 'import horovod, horovod.torch as hvd; print("horovod", horovod.__version__, "nccl", hvd.nccl_built())' || exit 1

[ "${GPU_TESTS:-1}" = 0 ] || python3 -m pytest -q -rs -p no:cacheprovider tests/test_horovod.py -k gpu 2>&1 | tail -4
JOB="--precision bf16 --data-format channels_last --batch-per-gpu ${BATCH:-128} --steps ${STEPS:-40} --gpus 1,$N"
for model in ${MODELS:-resnet50 densenet121}; do
  python3 -m mgbench compare --frameworks horovod --strategies hvd --model $model $JOB --out runs/hvd-$model 2>&1 | grep -E "│ horovod|rror"
  python3 -m mgbench compare --frameworks pytorch --strategies ddp --model $model $JOB --out runs/ddp-$model 2>&1 | grep -E "│ pytorch|rror"
  tar czf "$OUT/horovod-$model.tgz" runs/hvd-$model runs/ddp-$model
done
