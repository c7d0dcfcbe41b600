#!/usr/bin/env bash
# GPT-2 124M on one GPU: the plain loop (benchmarks/plain_gpt2.py), the yardstick of the PyTorch
# adapter's tokens/s and model-FLOPs utilisation, from the repo root with .whl/ carried
# (gpu_env.sh installs its wheels); writes under $OUT/lm as it goes, so a part cut off by the
# machine's limit still hands back the lines written before it.
#
# bf16, batch 16, 1024 tokens a sequence, WARMUP (default 10) untimed steps then STEPS (default 50)
# timed ones, synthetic tokens resident on the GPU. Parts (PARTS, any of: plain-eager
# plain-compiled):
#   plain-eager     the plain loop without torch.compile
#   plain-compiled  the plain loop with --compile (torch.compile's default mode, forward and loss)
# Each part appends its JSON line to $OUT/lm/plain.jsonl; its whole console is $OUT/lm/<part>.console.
set -uo pipefail
source benchmarks/gpu_env.sh
PARTS=${PARTS:-plain-eager plain-compiled}
LM="--model gpt2 --batch 16 --seq-len 1024 --precision bf16 --steps ${STEPS:-50} --warmup ${WARMUP:-10}"
mkdir -p "$OUT/lm"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
part() { [[ " $PARTS " == *" $1 "* ]]; }
plain() {  # plain NAME OPTIONS...: one run of the plain loop, its line in plain.jsonl
  local name=$1
  shift
  local start=$SECONDS
  python3 benchmarks/plain_gpt2.py $LM "$@" --out "$OUT/lm/plain.jsonl" >"$OUT/lm/$name.console" 2>&1
  local status=$?
  tail -n 3 "$OUT/lm/$name.console"
  echo "$name: exit $status, $(( SECONDS - start )) s wall"
}
part plain-eager && plain plain-eager
part plain-compiled && plain plain-compiled --compile

# --- mgbench's own GPT-2 rows go here, in the same run (figures compared come from one run) ---
# The same job through mgbench's pytorch adapter, eager and --compile: its command, its --out
# under $OUT/lm, and the lines of its console to keep, as the parts above do. The compiled row is meant to reach 95% of
# plain-compiled's tokens/s and 38% model-FLOPs utilisation.
# --- end of mgbench's rows ---
