#!/usr/bin/env bash
# GPU benchmark: DDP DenseNet-121 reading real PNGs (a generated ChestX-ray14-layout set)
# against the same job on synthetic data. Device machine, repo root; writes under $OUT.
# Synthetic runs on 1 and N GPUs, real PNGs on N (the comparison asked for).
# Scale with IMAGES (default 20000), MODEL, BATCH, STEPS, IMAGE_SIZE (empty: the model's own).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 PYTHONPATH=$PWD PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
N=$(python3 -c 'import torch; print(max(torch.cuda.device_count(), 1))')
DATA=${DATA:-/tmp/chestxray-sample}
SIZE_ARGS=${IMAGE_SIZE:+--image-size $IMAGE_SIZE}
JOB="--frameworks pytorch --strategies ddp --timeout 400 --model ${MODEL:-densenet121} --precision ${PRECISION:-bf16}
     --data-format channels_last --batch-per-gpu ${BATCH:-128} --steps ${STEPS:-100} $SIZE_ARGS"
[ -d "$DATA" ] || time python3 -m mgbench make-sample-chestxray "$DATA" --n "${IMAGES:-20000}" --size 264
for dataset in "synthetic 1,$N" "chestxray:$DATA $N,$N"; do
  set -- $dataset
  name=$(echo "$1" | cut -d: -f1)
  python3 -m mgbench compare $JOB --dataset "$1" --gpus "$2" --out "runs/real-$name" 2>&1 | grep -E "│ pytorch|rror"
  grep -h -o '"devices": [0-9]*\|"loader_workers": [0-9]*\|"input_wait_fraction": [0-9.e-]*' "runs/real-$name/results.jsonl"
done
tar czf "$OUT/realdata.tgz" runs/real-*
