#!/usr/bin/env bash
# Whether a row's figure holds from one compare to the next: the same command COMPARES times
# (default 3) on one GPU of the GPU machine, each compare with mgbench's default rounds, from the
# repo root; writes under $OUT. Parts (PARTS, in this order; DEADLINE=S starts no compare once
# the script has run S seconds):
#   default  the default command as typed with one GPU: `compare --frameworks pytorch --gpus 1`
#            (DenseNet-121, fp32, the default job on a GPU: 256 per GPU, 100 steps, synthetic data
#            fed from host memory)
#   real     the same job on real data: SAMPLE_N (default 2000) ChestX-ray14-layout PNGs of
#            256 px drawn on the machine (`make-sample-chestxray`), read by the loader's workers
# Ends with each part's row figures (steady rate, its interval, rounds, bottleneck) and their spread
# from compare to compare, (max - min) / median (benchmarks/repeatability_table.py), and the host's
# speed through the command: one fixed Python loop timed every 2 s (benchmarks/host_speed.py),
# its p10, median and p90 in ms ($OUT/host-speed.log holds every sample).
set -uo pipefail
source benchmarks/gpu_env.sh
PARTS=${PARTS:-default real}
COMPARES=${COMPARES:-3}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
rm -rf runs/repeat-*
python3 benchmarks/host_speed.py "$OUT/host-speed.log" &
HOST_SPEED=$!
if [[ " $PARTS " == *" real "* ]]; then
  python3 -m mgbench make-sample-chestxray /tmp/sample --n "${SAMPLE_N:-2000}" --size 256 2>&1 | tail -1
fi
for part in $PARTS; do
  options=()
  [ "$part" = real ] && options=(--dataset chestxray:/tmp/sample)
  for k in $(seq "$COMPARES"); do
    [ $SECONDS -lt "${DEADLINE:-999999}" ] || break
    echo "$(date +%T) [$SECONDS s] $part $k"
    python3 -m mgbench compare --frameworks pytorch --gpus 1 "${options[@]}" --out "runs/repeat-$part-$k" 2>&1 \
      | grep -E "│ pytorch|rror"
    tar czf "$OUT/repeat.tgz" --exclude="*-trace.json" --exclude="*.npz" runs/repeat-* 2>/dev/null
  done
done
kill $HOST_SPEED
python3 benchmarks/repeatability_table.py runs/repeat-*
python3 benchmarks/host_speed.py "$OUT/host-speed.log" --summary
