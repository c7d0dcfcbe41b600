#!/usr/bin/env bash
# The same job in every framework, on one GPU machine, from the repo root with .whl/ carried
# (scripts/fetch_gpu_deps.sh fills it: Keras, Horovod's sdist, Chainer's wheel). Writes under $OUT.
#
# DenseNet-121 as CheXNet on ChestX-ray14-layout PNGs (IMAGES, default 2000, 264 px), fp32,
# 64 per GPU, EPOCHS (default 5) epochs through each framework's own loader with validation and
# the test split, one round on GPUS (compare's --gpus, default 1). For each start in INITS
# (default "same framework"), one compare of
# FRAMEWORKS (default pytorch,horovod,keras-jax,keras-torch,chainer; Horovod is built first where
# named, ~90-150 s); an entry INIT:F1,F2 names its own frameworks (INITS="same:chainer
# framework:pytorch,chainer" splits the work over two calls). benchmarks/same_job_table.py then prints per row its start, first losses,
# validation AUC per epoch, test AUC, time to train and time to TARGET (validation AUC, default
# 0.70), read off the epoch rows, so every framework trains all EPOCHS and the test AUCs compare.
# DEADLINE=S starts no compare once the script has run S seconds.
set -uo pipefail
source benchmarks/gpu_env.sh
PNG=/tmp/chestxray-264
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c 'import torch, jax; print("torch", torch.__version__, "cuda", torch.version.cuda, "jax", jax.__version__)'
[ -d $PNG ] || python3 -m mgbench make-sample-chestxray $PNG --n "${IMAGES:-2000}" --size 264 | tail -1
FRAMEWORKS=${FRAMEWORKS:-pytorch,horovod,keras-jax,keras-torch,chainer}
named=""
for entry in ${INITS:-same framework}; do [ "$entry" = "${entry%%:*}" ] && named+=" $FRAMEWORKS" || named+=" ${entry#*:}"; done
case $named in *horovod*)
  python3 -c "import horovod.torch" 2>/dev/null || MGBENCH_WHEELHOUSE=$PWD/.wheelhouse HOROVOD_GPU_OPERATIONS=NCCL \
    HOROVOD_BUILD_CUDA_CC_LIST=90 bash scripts/build_horovod.sh python3 /tmp/site >"$OUT/horovod-build.log" 2>&1 \
    || tail -20 "$OUT/horovod-build.log" ;;
esac
folders=()
for entry in ${INITS:-same framework}; do
  init=${entry%%:*} frameworks=$FRAMEWORKS
  [ "$entry" = "$init" ] || frameworks=${entry#*:}
  if [ $SECONDS -ge "${DEADLINE:-999999}" ]; then echo "init $init not started: past DEADLINE"; continue; fi
  rm -rf runs/same-job-$init
  echo "$(date +%T) --init $init: $frameworks"
  python3 -m mgbench compare --frameworks "$frameworks" --model densenet121 --precision fp32 \
    --batch-per-gpu 64 --epochs "${EPOCHS:-5}" --gpus "${GPUS:-1}" --repeat 1 --dataset chestxray:$PNG --init "$init" --profile 0 --timeout 500 \
    --out runs/same-job-$init >"$OUT/same-job-$init.log" 2>&1 || grep -h "rror" "$OUT/same-job-$init.log" | tail -3
  grep -h "Same start" "$OUT/same-job-$init.log"
  mkdir -p "$OUT/same-job-$init"
  cp runs/same-job-$init/{results.jsonl,summary.md,report.html} "$OUT/same-job-$init/" 2>/dev/null
  folders+=(runs/same-job-$init)
done
python3 benchmarks/same_job_table.py --target "${TARGET:-0.70}" "${folders[@]}" | tee "$OUT/same-job.txt"
