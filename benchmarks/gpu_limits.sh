#!/usr/bin/env bash
# How close each row is to the device and what holds it back, on one GPU of the GPU machine,
# in one call, from the repo root (writes under $OUT). First `mgbench bandwidth` (the
# dense matmul peak, bf16 and fp32), copied into every compare's folder so that the rows' share
# of the peak is taken against it; then per model (ResNet-50, DenseNet-121; bf16, channels_last,
# 128 per GPU, --gpus 1, default profiled window):
#   eager     pytorch, keras-jax, keras-torch (their default strategies)
#   compiled  pytorch --compile reduce-overhead
#   resident  pytorch with --data-on-device, beside benchmarks/plain_ddp.py timed the same way
#             (CUDA events, no sync inside the window) and with a sync after every step
# and once: eager pytorch DenseNet-121 with MGBENCH_STEP_SYNC=1 (every step synchronised and its
# loss read), against the eager row: what the synchronisation costs. Ends with the table of
# benchmarks/limits_table.py ($OUT/limits.csv) and the run folders without raw traces
# ($OUT/limits.tgz). Keras wheels travel in .whl/ (gpu_env.sh); scale with MODELS, STEPS, PARTS
# (any of: eager compiled resident sync).
set -uo pipefail
source benchmarks/gpu_env.sh
PARTS=${PARTS:-eager compiled resident sync}
JOB="--gpus 1 --precision bf16 --data-format channels_last --batch-per-gpu 128 --steps ${STEPS:-50} --timeout 300"
python3 -c 'import torch, jax; print("torch", torch.__version__, "cuda", torch.version.cuda, "jax", jax.__version__)'
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
rm -rf runs/limits-*
python3 -m mgbench bandwidth --gpus 1 --sizes 1M,64M --out runs/limits-peak 2>&1 | grep -E "matmul|rror"
fresh() {  # a run folder holding only the measured bandwidth.json, which compare reuses
  mkdir -p "runs/limits-$1" && cp runs/limits-peak/bandwidth.json "runs/limits-$1/" 2>/dev/null
  echo "runs/limits-$1"
}
compare() {  # compare NAME OPTIONS...: one compare into runs/limits-NAME
  local name=$1
  shift
  python3 -m mgbench compare "$@" $JOB --out "$(fresh "$name")" 2>&1 | grep -E "│ (pytorch|keras)|rror"
}
part() { [[ " $PARTS " == *" $1 "* ]]; }
for model in ${MODELS:-resnet50 densenet121}; do
  part eager && compare eager-$model --frameworks pytorch,keras-jax,keras-torch --model $model
  part compiled && compare compiled-$model --frameworks pytorch --model $model --compile reduce-overhead
  if part resident; then
    compare resident-$model --frameworks pytorch --model $model --data-on-device
    for timing in window sync; do
      python3 -m torch.distributed.run --standalone --nproc-per-node 1 benchmarks/plain_ddp.py \
        --model $model --batch 128 --steps ${STEPS:-50} --timing $timing 2>&1 | grep plain-ddp
    done
  fi
done
part sync && MGBENCH_STEP_SYNC=1 compare sync-densenet121 --frameworks pytorch --model densenet121
python3 benchmarks/limits_table.py runs/limits-*-* --csv "$OUT/limits.csv"
tar czf "$OUT/limits.tgz" --exclude="*-trace.json" runs/limits-*
