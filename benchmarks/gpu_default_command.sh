#!/usr/bin/env bash
# The command mgbench exists for, as typed, on every GPU of the GPU machine, then Keras over
# PyTorch beside PyTorch DDP on the same settings (bf16, channels_last, 128 per GPU) and
# PyTorch's default fp32 job in both data formats, all in this one call so the figures compare.
# From the repo root with the Keras wheels in .whl/; writes runs/ and one $OUT/*.tgz per part as it ends.
# PART=default, PART=keras-torch or PART=formats runs one part (default: all three).
set -uo pipefail
source benchmarks/gpu_env.sh
N=$(python3 -c 'import torch; print(torch.cuda.device_count())')
python3 -m mgbench env > "$OUT/env.txt" 2>&1
part() { [ -z "${PART:-}" ] || [ "$PART" = "$1" ]; }
if part default; then
  start=$(date +%s)
  python3 -m mgbench compare --frameworks keras,pytorch --gpus "$N" --out runs/default-command 2>&1 | tail -n 25
  echo "default command as typed: $(( $(date +%s) - start )) s"
  tar czf "$OUT/default-command.tgz" runs/default-command
fi
if part keras-torch; then
  for model in ${MODELS:-resnet50 densenet121}; do
    python3 -m mgbench compare --frameworks keras-torch,pytorch --gpus 1,"$N" --model "$model" --precision bf16 \
      --batch-per-gpu 128 --steps "${STEPS:-60}" --timeout 400 --out "runs/keras-torch-$model" 2>&1 | grep -E "│ (keras|pytorch)|rror"
    tar czf "$OUT/keras-torch-$model.tgz" "runs/keras-torch-$model"
  done
fi
if part formats; then
  for format in channels_first channels_last; do
    python3 -m mgbench compare --frameworks pytorch --gpus 1 --model resnet50 --data-format "$format" \
      --out "runs/pytorch-fp32-$format" 2>&1 | grep -E "│ pytorch|rror"
  done
  tar czf "$OUT/formats.tgz" runs/pytorch-fp32-*
fi
