#!/usr/bin/env bash
# JPEGs decoded by the training GPU (--decode gpu: nvJPEG, crop on the device) against the
# loader's workers (--decode cpu) and against synthetic data, on one H100/H200, from the repo root
# with .whl/ filled by scripts/fetch_gpu_deps.sh (Keras for keras-jax and keras-torch, the
# pillow-simd sdist). ResNet-50, bf16, channels_last, 128 per GPU, on an ImageNet-style class
# folder of JPEGs (benchmarks/make_jpeg_folder.py, as gpu_realdata.sh makes it), each part on
# --decode gpu, --decode cpu and synthetic data (a framework without a device decoder gets an
# `unsupported` row saying so), with the decode rates and the ceiling row. PARTS picks parts, in
# order (default all: ceiling rates torch-ro torch keras, in one 10-minute command: 557 s on one
# H200 in benchmarks/RUNS.md run br and 499 s on one H100 in run by, each with torch's compiler
# cache warm; on a fresh machine the last compares fall past DEADLINE, runs bu and bx; pillow-simd
# builds beside the ceiling's compile, and rows after the first compiled one read its graphs from
# torch's compiler cache). A part named again runs its rows again as a further round
# (PARTS="... torch" a second eager round at the end):
#   overlap   what the decode takes from the step, part by part (benchmarks/decode_overlap.py),
#             at the hardware queues --decode gpu sets, with a profile
#   overlap-default-queues  the same at CUDA's default hardware queues
#   overlap-eager  the eager step alone, beside the decoder's host work part by part, profiled
#   rates     Pillow's, pillow-simd's and nvJPEG's decode rates (benchmarks/decode_rate.py)
#   ceiling   the fastest PyTorch step against MLPerf's per-GPU figure (gpu_ceiling.sh's compiled-256)
#   torch     pytorch, eager
#   keras     keras-jax, then keras-torch (KERAS_TORCH_STEPS steps, default 40: its steps are
#             seven times as long as the others')
#   torch-ro  pytorch with --compile reduce-overhead
# The loaders decode with pillow-simd where it builds, as the project's environments install it in
# Pillow's place (mgbench/runner/pillow_simd.py); HOST_PILLOW=image keeps the image's Pillow. The
# rows' `decoder` names the build.
# Writes $OUT/decode.txt (benchmarks/decode_table.py), $OUT/decode-rates.txt, $OUT/ceiling.txt and
# $OUT/decode.tgz (run folders, logs). keras-jax's compiled steps are cached between its three
# compares (JAX_COMPILATION_CACHE_DIR), as mgbench keeps torch's compiler cache between runs
# (runner/counting.py's compiler_cache): the rows' compile seconds after the first are the caches'.
# REPEAT=N (default 1) runs each part's rows N times, alternating (a host-bound eager row follows
# its machine's moment: decode_table.py takes each row's median). SHARES (default 0) gives a
# --decode gpu row for each host share it lists (e.g. "0 0.5"); Keras' rows keep 0 (keras-jax's
# and keras-torch's loaders hand the GPU whole batches and refuse a share).
# Scale with STEPS (default 100: a --decode gpu step varies more from step to step, and over 30
# steps the warm-up detector can take the first, slower steps as steady), BATCH (128),
# JPEG_CLASSES (40, 60 images each: every run also
# scores the validation split once), WORKERS (the loader's default). DEADLINE=S (default 530)
# starts no part or compare once the script has run S seconds, so the whole ends within 10
# minutes (what is left out says so).
set -uo pipefail
source benchmarks/gpu_env.sh
export JAX_COMPILATION_CACHE_DIR=${JAX_COMPILATION_CACHE_DIR:-/tmp/jax-cache}
JPEG=${JPEG:-/tmp/jpeg-folder-${JPEG_CLASSES:-40}}
PARTS=${PARTS:-ceiling rates torch-ro torch keras}
LOGS=runs/decode-logs
JOB=(--gpus 1 --model resnet50 --precision bf16 --data-format channels_last --batch-per-gpu "${BATCH:-128}"
  --steps "${STEPS:-100}" --timeout 300 --profile 0)
[ -n "${WORKERS:-}" ] && JOB+=(--workers "$WORKERS")
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c 'import torch, torchvision; print("torch", torch.__version__, "torchvision", torchvision.__version__)'
rm -rf runs/dec-*; mkdir -p $LOGS
[ -d "$JPEG" ] || python3 benchmarks/make_jpeg_folder.py "$JPEG" --classes "${JPEG_CLASSES:-40}" --per-class 60

# compare NAME ARGS...: one compare into runs/dec-NAME, its output in $LOGS/dec-NAME.log
compare() {
  local name=$1; shift
  if [ $SECONDS -ge "${DEADLINE:-530}" ]; then echo "dec-$name not started: past DEADLINE"; return; fi
  echo "$(date +%T) dec-$name"
  python3 -m mgbench compare "${JOB[@]}" --out runs/dec-$name "$@" >"$LOGS/dec-$name.log" 2>&1 \
    || grep -h "rror" "$LOGS/dec-$name.log" | tail -3
}
# three NAME ARGS...: NAME on the JPEGs decoded by the GPU (a row for each of SHARES, the share of
# each batch the workers decode: --decode-host-share) and by the workers, then on synthetic data;
# REPEAT rounds of them, one row of each after the other. Round K of a NAME, past its first, is
# named NAME-rK, whether it comes from REPEAT or from a part named again.
declare -A ROUNDS
three() {
  local name=$1 share round tag; shift
  for round in $(seq "${REPEAT:-1}"); do
    ROUNDS[$name]=$((${ROUNDS[$name]:-0} + 1))
    tag=$name; [ "${ROUNDS[$name]}" -gt 1 ] && tag=$name-r${ROUNDS[$name]}
    for share in ${SHARES:-0}; do
      if [ "$share" = 0 ]; then
        compare "$tag-gpu" --dataset "imagefolder:$JPEG" --decode gpu "$@"
      else
        compare "$tag-gpu-$share" --dataset "imagefolder:$JPEG" --decode gpu --decode-host-share "$share" "$@"
      fi
    done
    compare "$tag-cpu" --dataset "imagefolder:$JPEG" --decode cpu "$@"
    compare "$tag-synthetic" --dataset synthetic "$@"
  done
}

# pillow-simd, built from its sdist in .whl/ into a folder put before the image's packages (a venv
# would not see the image's own venv's packages), started at once, beside the parts before the
# first that needs it: `rates` runs it by a wrapper of the image's interpreter, the training parts
# with it on PYTHONPATH (`simd_loaders`).
SIMD=/tmp/pillow-simd
IMAGE_PYTHONPATH=$PYTHONPATH
build_simd() {
  mkdir -p $SIMD && python3 -m pip install -q --no-index --no-build-isolation --no-deps --target $SIMD/site \
    .whl/pillow_simd-*.tar.gz >"$LOGS/pillow-simd.log" 2>&1 \
    && printf '#!/bin/sh\nPYTHONPATH=%s/site:$PYTHONPATH exec python3 "$@"\n' $SIMD >$SIMD/python && chmod +x $SIMD/python
}
# Built only for a part that uses it, so that no other part's timings run beside its compile.
case " $PARTS " in
  *" rates "*) USES_SIMD=1 ;;
  *" torch "* | *" torch-ro "* | *" keras "*) [ "${HOST_PILLOW:-simd}" = image ] || USES_SIMD=1 ;;
esac
[ -n "${USES_SIMD:-}" ] && ls .whl/pillow_simd-*.tar.gz >/dev/null 2>&1 && { build_simd & SIMD_BUILD=$!; }
# simd_built: whether pillow-simd built, waiting for its build the first time.
simd_built() {
  if [ -n "${SIMD_BUILD:-}" ]; then
    wait "$SIMD_BUILD" || tail -25 "$LOGS/pillow-simd.log"
    SIMD_BUILD=
  fi
  [ -x $SIMD/python ]
}
# simd_loaders: the training parts' processes import pillow-simd from here on, where it built and
# HOST_PILLOW is not `image`.
simd_loaders() {
  [ "${HOST_PILLOW:-simd}" = image ] || [ -n "${LOADERS_CHOSEN:-}" ] && return
  LOADERS_CHOSEN=1
  if simd_built; then export PYTHONPATH=$SIMD/site:$IMAGE_PYTHONPATH; else echo "the loaders keep the image's Pillow"; fi
}
# The decode rates of this machine: Pillow (the image's), pillow-simd and nvJPEG on one GPU, on the same JPEGs.
rates() {
  local interpreters=(--python python3)
  simd_built && interpreters+=(--python $SIMD/python)
  PYTHONPATH=$IMAGE_PYTHONPATH python3 benchmarks/decode_rate.py "imagefolder:$JPEG" --processes 1,15 --images 1500 \
    "${interpreters[@]}" | tee "$OUT/decode-rates.txt"
}

for part in $PARTS; do
  if [ $SECONDS -ge "${DEADLINE:-530}" ]; then echo "$part not started: past DEADLINE"; continue; fi
  echo "$(date +%T) $part"
  case $part in
  overlap)  # at the count --decode gpu sets (frameworks/specs.py)
    CUDA_DEVICE_MAX_CONNECTIONS=32 python3 benchmarks/decode_overlap.py "imagefolder:$JPEG" --compile reduce-overhead \
      --profile "$OUT" | tee "$OUT/overlap.txt" ;;
  overlap-eager)
    CUDA_DEVICE_MAX_CONNECTIONS=32 python3 benchmarks/decode_overlap.py "imagefolder:$JPEG" --profile "$OUT" \
      | tee "$OUT/overlap-eager.txt" ;;
  overlap-default-queues)
    python3 benchmarks/decode_overlap.py "imagefolder:$JPEG" --compile reduce-overhead | tee "$OUT/overlap-default-queues.txt" ;;
  rates) rates ;;
  ceiling) PARTS=compiled-256 bash benchmarks/gpu_ceiling.sh | tee "$OUT/ceiling.txt" ;;
  torch) simd_loaders; three torch --frameworks pytorch ;;
  keras)
    simd_loaders
    SHARES=0 three keras-jax --frameworks keras-jax
    SHARES=0 three keras-torch --frameworks keras-torch --steps "${KERAS_TORCH_STEPS:-40}" ;;
  torch-ro) simd_loaders; three torch-ro --frameworks pytorch --compile reduce-overhead ;;
  *) echo "unknown part $part" ;;
  esac
done
python3 benchmarks/decode_table.py runs/dec-*/ | tee "$OUT/decode.txt"
tar czf "$OUT/decode.tgz" --exclude="*-trace.json" --exclude="*.npz" runs/dec-* $LOGS
