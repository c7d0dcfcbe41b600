#!/usr/bin/env bash
# ViT-B/16 through the frameworks on one GPU, beside timm's own training benchmark of the same
# architecture, in one run, from the repo root with .whl/ carried (scripts/fetch_gpu_deps.sh fills
# it: Keras, Horovod's sdist, timm's benchmark.py); writes under $OUT.
#
# bf16, 128 per GPU, --gpus 1, synthetic data, STEPS (default 40) steps, no profiled window:
#   eager     pytorch, keras-jax, keras-torch (their default strategies), and pytorch with
#             --data-on-device (its batches resident, as timm's benchmark keeps its one input)
#   compiled  pytorch --compile (torch.compile's default mode)
#   horovod   horovod, built from the sdist in the background while the others run (~90-150 s)
#   timm      timm's benchmark.py --bench train on vit_base_patch16_224 (the same architecture:
#             86.6M parameters, fused SDPA attention), eager and --torchcompile, in the same run
# `mgbench bandwidth` first measures the dense matmul peak, so each row's share of it is taken
# against this GPU. Ends with benchmarks/limits_table.py (img/s, achieved TFLOP/s, share of peak)
# and each row's attention kernel. PARTS (any of: eager compiled horovod timm) scales the run;
# DEADLINE=S starts nothing once the script has run S seconds.
set -uo pipefail
source benchmarks/gpu_env.sh
PARTS=${PARTS:-eager compiled horovod timm}
JOB="--gpus 1 --model vit_b_16 --precision bf16 --batch-per-gpu 128 --steps ${STEPS:-40} --profile 0 --timeout 300"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c 'import torch, jax, timm; print("torch", torch.__version__, "cuda", torch.version.cuda, "jax", jax.__version__, "timm", timm.__version__)'
part() { [[ " $PARTS " == *" $1 "* ]] && [ $SECONDS -lt "${DEADLINE:-999999}" ]; }
if [[ " $PARTS " == *" horovod "* ]] && ! python3 -c "import horovod.torch" 2>/dev/null; then
  MGBENCH_WHEELHOUSE=$PWD/.wheelhouse HOROVOD_GPU_OPERATIONS=NCCL HOROVOD_BUILD_CUDA_CC_LIST=90 \
    bash scripts/build_horovod.sh python3 /tmp/site >"$OUT/horovod-build.log" 2>&1 &
  building=$!
fi
rm -rf runs/vit-*
python3 -m mgbench bandwidth --gpus 1 --sizes 1M,64M --out runs/vit-peak 2>&1 | grep -E "matmul|rror"
compare() {  # compare NAME OPTIONS...: one compare into runs/vit-NAME, the measured peak beside it
  local name=$1
  shift
  mkdir -p "runs/vit-$name" && cp runs/vit-peak/bandwidth.json "runs/vit-$name/" 2>/dev/null
  echo "$(date +%T) $name"
  python3 -m mgbench compare "$@" $JOB --out "runs/vit-$name" 2>&1 | grep -E "│ (pytorch|keras|horovod)|rror"
  mkdir -p "$OUT/vit-$name" && cp runs/vit-$name/{results.jsonl,summary.md} "$OUT/vit-$name/"
}
timm_bench() {  # timm_bench NAME OPTIONS...: timm's train benchmark, its CSV result kept
  [ -f .whl/timm_benchmark.py ] || { echo "no .whl/timm_benchmark.py (scripts/fetch_gpu_deps.sh): timm $1 left out"; return; }
  echo "$(date +%T) timm $1"
  python3 .whl/timm_benchmark.py --bench train --model vit_base_patch16_224 -b 128 --amp --amp-dtype bfloat16 \
    --num-warm-iter 10 --num-bench-iter 40 --results-file "$OUT/timm-$1.csv" "${@:2}" 2>&1 | grep -E "samples/sec|rror" | tail -2
}
part eager && compare eager --frameworks pytorch,keras-jax,keras-torch
part eager && compare resident --frameworks pytorch --data-on-device
part timm && timm_bench eager
part compiled && compare compiled --frameworks pytorch --compile default
part timm && timm_bench compiled --torchcompile
if [ -n "${building:-}" ]; then
  wait "$building" || tail -20 "$OUT/horovod-build.log"
fi
part horovod && compare horovod --frameworks horovod
python3 benchmarks/limits_table.py runs/vit-*[a-z] --csv "$OUT/vit.csv" 2>&1 | grep -v "^$"
python3 - <<'PY'
from pathlib import Path
from mgbench.records.results import read_results
for folder in sorted(Path("runs").glob("vit-*")):
    for row in read_results(folder / "results.jsonl") if (folder / "results.jsonl").exists() else []:
        c = row.config
        print(f"{folder.name}: {c.framework} {c.strategy} {row.status} {row.timing.samples_per_sec} img/s, "
              f"attention {row.build.attention_kernel}, compiler {row.compiled.compiler}, parameters {row.build.parameters}")
PY
