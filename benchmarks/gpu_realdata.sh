#!/usr/bin/env bash
# Real data through each framework's own loader against the same job on synthetic data, on one
# GPU machine, from the repo root with .whl/ filled (scripts/fetch_gpu_deps.sh; Keras
# for keras-jax and keras-torch, Horovod's sdist, Chainer's wheel). Writes under $OUT.
#
# PARTS picks what runs (each part's real and synthetic rows come from the same run; a part
# ends within 10 minutes on its own, two or three together where noted):
#   densenet-torch  DenseNet-121 on ChestX-ray14-layout PNGs (264 px) vs synthetic: pytorch and
#                   keras-torch, staged `ddp` and `ddp-unstaged` (TORCH_STRATEGIES=ddp: staged only)
#   horovod         builds Horovod's NCCL flavour (~90 s), then DenseNet-121 PNGs vs synthetic
#   densenet-workers  DenseNet-121 PNGs vs synthetic for DW_FRAMEWORKS (default pytorch,horovod;
#                   Horovod is built first where named), each round with the default loader
#                   workers and with each of WORKER_COUNTS (default 4; empty: none)
#   host            the shared decode and augmentation's img/s on this host's cores, PNGs and JPEGs,
#                   in 1, 8 and (cores - 1) processes (benchmarks/decode_rate.py)
#   densenet-jax    keras-jax DenseNet-121 PNGs vs synthetic, `jax-shard-map` and its -unstaged
#   resnet-jax      keras-jax ResNet-50 on an ImageNet-style JPEG class folder vs synthetic
#   resnet-torch    pytorch ResNet-50 JPEG folder vs synthetic, eager and --compile reduce-overhead
#   resnet-compiled pytorch ResNet-50 --compile reduce-overhead alone, JPEGs with the default loader
#                   workers and with each of WORKER_COUNTS
#   chainer         chainer ResNet-50 (fp32, channels_first, no cuDNN on CuPy 14) PNGs vs synthetic
# bf16, channels_last, 128 per GPU, --gpus 1,N (N: the machine's GPUs). Scale with STEPS, BATCH,
# IMAGES (PNGs, default 6000: runs by --steps read them epoch after epoch), JPEG_CLASSES.
# ROUNDS=R (default 1) runs each part's synthetic and real compares R times, alternating, and
# the table compares their medians: eager steps bound by the host wander by several percent
# from one run to the next on these machines. Throughout, benchmarks/host_speed.py logs how long
# a fixed Python loop takes on one core every 2 s ($OUT/host-speed.log), to read step times against.
# Each compare's output goes into its part's tarball ($OUT/PART.tgz, logs/). DEADLINE=S starts
# no compare once the script has run S seconds, so a time limit on the whole command cuts no
# part's table.
set -uo pipefail
source benchmarks/gpu_env.sh
N=$(python3 -c 'import torch; print(torch.cuda.device_count())')
GPUS=$([ "$N" = 1 ] && echo 1 || echo "1,$N")
PNG=/tmp/chestxray-264 JPEG=/tmp/jpeg-folder
JOB="--gpus $GPUS --precision bf16 --batch-per-gpu ${BATCH:-128} --steps ${STEPS:-50} --timeout 400 --profile 0"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
nproc; lscpu | grep -E "^Model name|^Thread|^Core|^Socket"; df -h /dev/shm | tail -1
python3 benchmarks/host_speed.py "$OUT/host-speed.log" & SPEED=$!
trap 'kill $SPEED' EXIT
LOGS=runs/rd-logs; mkdir -p $LOGS

pngs() { [ -d $PNG ] || python3 -m mgbench make-sample-chestxray $PNG --n "${IMAGES:-6000}" --size 264 | tail -1; }
jpegs() { [ -d $JPEG ] || python3 benchmarks/make_jpeg_folder.py $JPEG --classes "${JPEG_CLASSES:-100}" --per-class 60; }
# horovod: Horovod's NCCL flavour built into /tmp/site once, its log in $OUT
horovod() {
  python3 -c "import horovod.torch" 2>/dev/null && return
  MGBENCH_WHEELHOUSE=$PWD/.wheelhouse HOROVOD_GPU_OPERATIONS=NCCL HOROVOD_BUILD_CUDA_CC_LIST=90 \
    bash scripts/build_horovod.sh python3 /tmp/site >"$OUT/horovod-build.log" 2>&1 || { tail -20 "$OUT/horovod-build.log"; return 1; }
}
# compare NAME DATASET ARGS...: one compare into runs/rd-NAME, its output in $LOGS/rd-NAME.log
compare() {
  local name=$1 dataset=$2; shift 2
  if [ $SECONDS -ge "${DEADLINE:-999999}" ]; then echo "rd-$name not started: past DEADLINE"; return; fi
  rm -rf runs/rd-$name
  echo "$(date +%T) rd-$name"
  python3 -m mgbench compare $JOB --dataset "$dataset" --out runs/rd-$name "$@" >"$LOGS/rd-$name.log" 2>&1 \
    || grep -h "rror" "$LOGS/rd-$name.log" | tail -3
}
# rounds NAME VARIANT... -- ARGS...: each variant's compare as NAME-<dataset>[-w<workers>]-r<round>,
# the variants alternating within each of ROUNDS rounds. A variant is a --dataset string, with
# %N appended for --workers N. Folders of an earlier run on the machine are removed first.
rounds() {
  local name=$1 variants=(); shift
  while [ "$1" != "--" ]; do variants+=("$1"); shift; done; shift
  rm -rf runs/rd-$name-*
  for round in $(seq "${ROUNDS:-1}"); do
    for variant in "${variants[@]}"; do
      local data=${variant%\%*} tag=${variant%%:*} extra=()
      if [ "$variant" != "$data" ]; then tag+=-w${variant##*%}; extra=(--workers "${variant##*%}"); fi
      compare "$name-$tag-r$round" "$data" "$@" "${extra[@]}"
    done
  done
}
# table PART FOLDERS...: the part's rows side by side, and each real row's share of synthetic
table() {
  local part=$1; shift
  echo "== $part"; python3 benchmarks/realdata_table.py "$@" | tee "$OUT/$part.txt"
  tar czf "$OUT/$part.tgz" --exclude="*-trace.json" "$@" $LOGS
}

for part in ${PARTS:-densenet-torch horovod}; do
  case $part in
  densenet-torch)
    pngs
    rounds dt synthetic "chestxray:$PNG" -- --frameworks pytorch,keras-torch --strategies "${TORCH_STRATEGIES:-ddp,ddp-unstaged}" \
      --model densenet121
    table $part runs/rd-dt-* ;;
  horovod)
    pngs; horovod || continue
    rounds hv synthetic "chestxray:$PNG" -- --frameworks horovod --model densenet121
    table $part runs/rd-hv-* ;;
  densenet-workers)
    pngs
    case ${DW_FRAMEWORKS:=pytorch,horovod} in *horovod*) horovod || continue ;; esac
    counts=(); for workers in ${WORKER_COUNTS-4}; do counts+=("chestxray:$PNG%$workers"); done
    rounds dw synthetic "chestxray:$PNG" "${counts[@]}" -- --frameworks "$DW_FRAMEWORKS" --model densenet121
    table $part runs/rd-dw-* ;;
  host)
    pngs; jpegs
    for data in "chestxray:$PNG" "imagefolder:$JPEG"; do
      python3 benchmarks/decode_rate.py "$data" --processes "1,8,$(($(nproc) - 1))"
    done | tee "$OUT/host.txt" ;;
  densenet-jax)
    pngs
    rounds dj synthetic "chestxray:$PNG" -- --frameworks keras-jax --strategies jax-shard-map,jax-shard-map-unstaged --model densenet121
    table $part runs/rd-dj-* ;;
  resnet-jax)
    jpegs
    rounds rj synthetic "imagefolder:$JPEG" -- --frameworks keras-jax --model resnet50
    table $part runs/rd-rj-* ;;
  resnet-torch)
    jpegs
    rounds rt synthetic "imagefolder:$JPEG" -- --frameworks pytorch --model resnet50
    rounds rtc synthetic "imagefolder:$JPEG" -- --frameworks pytorch --model resnet50 --compile reduce-overhead
    table $part runs/rd-rt-* runs/rd-rtc-* ;;
  resnet-compiled)
    jpegs
    counts=(); for workers in ${WORKER_COUNTS-4}; do counts+=("imagefolder:$JPEG%$workers"); done
    rounds rc synthetic "imagefolder:$JPEG" "${counts[@]}" -- --frameworks pytorch --model resnet50 --compile reduce-overhead
    table $part runs/rd-rc-* ;;
  chainer)
    pngs
    rounds ch synthetic "chestxray:$PNG" -- --frameworks chainer --model resnet50 --precision fp32 \
      --data-format channels_first --batch-per-gpu 64 --steps 20
    table $part runs/rd-ch-* ;;
  *) echo "unknown part $part" ;;
  esac
done
