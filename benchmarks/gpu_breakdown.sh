#!/usr/bin/env bash
# Where step time goes on every GPU of the GPU machine, in one call: PyTorch's three
# strategies on ResNet-50, then DenseNet-121 under PyTorch DDP, Keras over JAX and Keras over
# PyTorch; bf16, channels_last, 128 per GPU, each run with the default profiled window
# (--profile auto). From the repo root with the Keras wheels in .whl/; one $OUT/*.tgz per part,
# without the raw traces (too large to hand back; the breakdown files keep their intervals).
set -uo pipefail
source benchmarks/gpu_env.sh
N=$(python3 -c 'import torch; print(torch.cuda.device_count())')
JOB="--gpus 1,$N --precision bf16 --batch-per-gpu 128 --steps ${STEPS:-40} --timeout 300"
python3 -m mgbench compare --frameworks pytorch --strategies all --model resnet50 $JOB --out runs/breakdown-resnet50 \
  2>&1 | grep -E "│ pytorch|rror"
tar czf "$OUT/breakdown-resnet50.tgz" --exclude="*-trace.json" runs/breakdown-resnet50
python3 -m mgbench compare --frameworks pytorch,keras-jax,keras-torch --model densenet121 $JOB \
  --out runs/breakdown-densenet121 2>&1 | grep -E "│ (pytorch|keras)|rror"
tar czf "$OUT/breakdown-densenet121.tgz" --exclude="*-trace.json" runs/breakdown-densenet121
