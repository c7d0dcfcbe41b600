#!/usr/bin/env bash
# Where keras-jax's 2-GPU step loses its time against 1 GPU. ResNet-50 jax-shard-map with
# the batches already on the GPUs (no input in the way), 1 and N GPUs, 5 steps traced with
# jax.profiler after the timed ones, then each trace broken down per device by
# benchmarks/xla_trace_timeline.py. VARIANTS adds runs, a line each: "label GPUS ENV=VALUE ..."
# (GPUS as compare's --gpus, e.g. 1,2).
# From the repo root with .whl carried; writes under $OUT.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
N=$(python3 -c 'import jax; print(len(jax.devices("gpu")))')
MODEL=${MODEL:-resnet50}
JOB="--frameworks keras-jax --strategies jax-shard-map --model $MODEL --precision bf16 --data-format channels_last
  --batch-per-gpu ${BATCH:-128} --steps ${STEPS:-40} --profile 5 --data-on-device --timeout 300"
measure() {  # label, GPU counts, then VAR=VALUE ... for the run's environment
  local label=$1 gpus=$2; shift 2
  env "$@" python3 -m mgbench compare $JOB --gpus "$gpus" --out "runs/kprof-$MODEL-$label" 2>&1 | grep -E "│ keras|rror"
  python3 benchmarks/xla_trace_timeline.py 5 runs/kprof-$MODEL-$label/profiles/*/rank0-trace.json
}
measure base "1,$N"
while read -r label gpus vars; do
  [ -n "$label" ] && measure "$label" "$gpus" $vars
done <<< "${VARIANTS:-}"
for run in runs/kprof-*; do tar czf "$OUT/$(basename $run).tgz" "$run"; done
