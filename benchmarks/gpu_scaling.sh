#!/usr/bin/env bash
# Scaling on every GPU of the GPU machine (N = its GPU count), in one call, from the repo root
# with .whl/ carried (scripts/fetch_gpu_deps.sh fills it); writes under $OUT. Parts (PARTS, in
# this order; DEADLINE=S starts nothing once the script has run S seconds; the tests stop at
# LIMIT=S, default 570, and TESTS=EXPR picks them as pytest's -k does):
#   optimizer  benchmarks/foreach_strides.py on GPU 0: torch's SGD step with gradients in their
#              weights' strides and with contiguous gradients (ResNet-50, channels_last)
#   keras-jax  ViT-B/16 (no batch-norm): jax-shard-map on COUNTS GPUs, jax-dp and
#              jax-dp-on-batch on N, beside the ResNet-50 rows of BENCHMARKS.md, where jax-dp
#              normalises every batch-norm over the global batch
#   chainer    chainermn on COUNTS GPUs (fp32, channels_first, 64 per GPU: all Chainer trains)
#   exchange   benchmarks/plain_ddp.py: DDP on 1 and N GPUs; on N, Horovod handing each gradient
#              over as a contiguous copy, and as a view of its memory (as mgbench does) under
#              each of HOROVOD_SETTINGS (default: Horovod's defaults, a 0.1 ms cycle, async
#              completion, both)
#   horovod    compare horovod,pytorch on COUNTS GPUs, then horovod on N under TUNED (default
#              a 0.1 ms cycle and async completion; Horovod's own defaults are 1 ms and off)
#   tests      tests/test_gpu_data_parallel.py, one pytest a case: for every framework and strategy,
#              N GPUs' weights after two steps equal 1 GPU's on the same global batch
# Horovod (NCCL flavour) is built from the carried sdist in the background, on the upper half of
# the cores, while the parts before `exchange` run on the lower half (~90-150 s; log in
# $OUT/horovod-build.log). Every training row: ResNet-50 or ViT-B/16, bf16, channels_last, 128
# per GPU, STEPS (default 40) steps, REPEAT (default 1) rounds, no profiled window; COUNTS (the
# compares' --gpus) defaults to 1,2,N where N > 2, else 1,N. The run folders come back as
# $OUT/scaling.tgz.
set -uo pipefail
source benchmarks/gpu_env.sh
PARTS=${PARTS:-optimizer keras-jax chainer exchange horovod tests}
TUNED=${TUNED:-HOROVOD_CYCLE_TIME=0.1,HOROVOD_ENABLE_ASYNC_COMPLETION=1}  # settings: comma-separated
HOROVOD_SETTINGS=${HOROVOD_SETTINGS:-"- HOROVOD_CYCLE_TIME=0.1 HOROVOD_ENABLE_ASYNC_COMPLETION=1 $TUNED"}
N=$(python3 -c 'import torch; print(torch.cuda.device_count())')
COUNTS=${COUNTS:-$(if [ "$N" -gt 2 ]; then echo "1,2,$N"; else echo "1,$N"; fi)}  # the compares' --gpus
command -v taskset >/dev/null || taskset() { shift 2; "$@"; }  # no taskset: run unpinned
CORES=$(nproc)
LOW="0-$((CORES / 2 - 1))"
HIGH="$((CORES / 2))-$((CORES - 1))"
JOB="--precision bf16 --data-format channels_last --batch-per-gpu 128 --steps ${STEPS:-40} --repeat ${REPEAT:-1} --profile 0 --timeout 300"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c 'import torch, jax; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version(), "jax", jax.__version__)'
part() { [[ " $PARTS " == *" $1 "* ]] && [ $SECONDS -lt "${DEADLINE:-999999}" ] && echo "$(date +%T) [$SECONDS s] $1"; }
keep() { tar czf "$OUT/scaling.tgz" --exclude="*-trace.json" --exclude="*.npz" runs/scaling-* 2>/dev/null; }  # after each part
rows() { grep -E "│ (pytorch|keras|horovod)|rror"; }

if [[ " $PARTS " == *" exchange "* || " $PARTS " == *" horovod "* || " $PARTS " == *" tests "* ]]; then
  MGBENCH_WHEELHOUSE=$PWD/.wheelhouse HOROVOD_GPU_OPERATIONS=NCCL HOROVOD_BUILD_CUDA_CC_LIST=90 \
    taskset -c "$HIGH" bash scripts/build_horovod.sh python3 /tmp/site >"$OUT/horovod-build.log" 2>&1 &
  building=$!
fi
rm -rf runs/scaling-*

part optimizer && taskset -c "$LOW" python3 benchmarks/foreach_strides.py 2>&1 | grep -E "resnet50|foreach-strides|rror"

if part keras-jax; then
  taskset -c "$LOW" python3 -m mgbench compare --frameworks keras-jax --strategies jax-shard-map --gpus "$COUNTS" \
    --model vit_b_16 $JOB --out runs/scaling-vit-kjax 2>&1 | rows
  keep
  part keras-jax && taskset -c "$LOW" python3 -m mgbench compare --frameworks keras-jax \
    --strategies jax-dp,jax-dp-on-batch --gpus "$N","$N" --model vit_b_16 $JOB --out runs/scaling-vit-kjax-dp 2>&1 | rows
  keep
fi

if part chainer; then
  taskset -c "$LOW" python3 -m mgbench compare --frameworks chainer --gpus "$COUNTS" --model resnet50 --precision fp32 \
    --data-format channels_first --batch-per-gpu 64 --steps 30 --repeat ${REPEAT:-1} --profile 0 --timeout 300 --out runs/scaling-chainer 2>&1 \
    | grep -E "│ chainer|rror"
  keep
fi

if [ -n "${building:-}" ]; then
  wait $building || { tail -30 "$OUT/horovod-build.log"; exit 1; }
  echo "$(date +%T) [$SECONDS s] horovod built"
  python3 -c 'import horovod, horovod.torch as hvd; print("horovod", horovod.__version__, "nccl", hvd.nccl_built())' || exit 1
fi

if part exchange; then
  for n in 1 "$N"; do
    python3 -m torch.distributed.run --standalone --nproc-per-node $n benchmarks/plain_ddp.py --steps 60 2>&1 | grep plain-
  done
  hvd() {  # hvd EXCHANGE SETTINGS: the plain loop under horovodrun with Horovod's SETTINGS ('-': none)
    local settings=${2#-}
    echo "$2: $(env ${settings//,/ } python3 -m horovod.runner.launch -np "$N" python3 benchmarks/plain_ddp.py --steps 60 \
      --exchange "$1" 2>&1 | grep -E "plain-|rror")"
  }
  hvd hvd-copy -
  for settings in $HOROVOD_SETTINGS; do hvd hvd-view "$settings"; done
fi

if part horovod; then
  python3 -m mgbench compare --frameworks horovod,pytorch --gpus "$COUNTS" --model resnet50 $JOB \
    --out runs/scaling-horovod 2>&1 | rows
  keep
  part horovod && env ${TUNED//,/ } python3 -m mgbench compare --frameworks horovod --gpus "$N","$N" \
    --model resnet50 $JOB --out runs/scaling-horovod-tuned 2>&1 | rows
  keep
fi

if part tests; then  # a pytest a case, so a case cut off at LIMIT leaves the others' results and reasons
  python3 -m pytest --co -q -p no:cacheprovider tests/test_gpu_data_parallel.py ${TESTS:+-k "$TESTS"} | grep :: |
    while read -r case; do
      left=$((${LIMIT:-570} - SECONDS))
      if [ $left -lt 20 ]; then echo "${case#*::}: not started (LIMIT)"; continue; fi
      timeout $left python3 -m pytest -q -rs -p no:cacheprovider --tb=line "$case" >/tmp/case.log 2>&1
      echo "${case#*::}: $(tail -1 /tmp/case.log)"
      grep -E "^(E |/.*Error|SKIPPED)" /tmp/case.log | head -4
    done
fi
echo "$(date +%T) [$SECONDS s] done"
