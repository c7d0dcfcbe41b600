#!/usr/bin/env bash
# GPT-2 124M on one GPU: the plain loop (benchmarks/plain_gpt2.py), the yardstick of the PyTorch
# adapter's tokens/s and model-FLOPs utilisation, from the repo root with .whl/ carried
# (gpu_env.sh installs its wheels); writes under $OUT/lm as it goes, so a part cut off by the
# machine's limit still hands back the lines written before it.
#
# bf16, batch 16, 1024 tokens a sequence, WARMUP (default 10) untimed steps then STEPS (default 50)
# timed ones, synthetic tokens resident on the GPU. Parts (PARTS, any of: plain-eager
# plain-compiled compiled parity xl; default the first three):
#   plain-eager     the plain loop without torch.compile
#   plain-compiled  the plain loop with --compile (torch.compile's default mode, forward and loss)
# Each part appends its JSON line to $OUT/lm/plain.jsonl; its whole console is $OUT/lm/<part>.console.
set -uo pipefail
source benchmarks/gpu_env.sh
PARTS=${PARTS:-plain-eager plain-compiled compiled}
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

# mgbench's own rows, in the same call as the plain loop (figures compared come from one call).
# compiled    pytorch (--compile, fused AdamW, as the plain loop steps) and keras-jax (XLA, which
#             compiles the update into its step: --fused-optimizer names no kernel of its own there, and is
#             refused it), GPT-2 124M, bf16, 16 a GPU,
#             STEPS timed steps, REPEAT (default 2) rounds: pytorch's tokens/s against
#             plain-compiled's, its MFU, keras-jax's against pytorch's
# parity      pytorch, keras-jax and keras-torch, eager where the framework is, 200 steps of the
#             Shakespeare corpus (runs/shakespeare-tokens, `mgbench prepare tokens`, carried) from
#             one start: each framework's loss at step 200 against pytorch's
# xl          gpt2-xl (1.5B) on one GPU under pytorch's ddp, fsdp, fsdp-grad-op and zero1 and
#             keras-jax's jax-dp and jax-fsdp, 10 steps: each strategy's peak memory (a batch of
#             16 that does not fit is halved until one does: the row says so), each framework's own
#             initialiser (--init framework: the shared start of 1.56B parameters, drawn with numpy
#             and written to the run folder, would take minutes)
compare() {  # compare NAME OPTIONS...: one mgbench compare into $OUT/lm/NAME, its console kept
  local name=$1
  shift
  local start=$SECONDS
  python3 -m mgbench compare --gpus 1 --precision bf16 --profile 0 "$@" --out "$OUT/lm/$name" \
    >"$OUT/lm/$name.console" 2>&1
  local status=$?
  grep -vE "^\s*$" "$OUT/lm/$name.console" | tail -n 30
  echo "$name: exit $status, $(( SECONDS - start )) s wall"
}
part compiled && compare compiled-pytorch --frameworks pytorch --model gpt2 --compile --fused-optimizer \
  --steps "${STEPS:-50}" --repeat "${REPEAT:-2}"
part compiled && compare compiled-keras-jax --frameworks keras-jax --model gpt2 --steps "${STEPS:-50}" \
  --repeat "${REPEAT:-2}"
part parity && compare parity --frameworks pytorch,keras --model gpt2 --dataset tokens:runs/shakespeare-tokens \
  --steps 200 --repeat 1
part xl && compare xl-pytorch --frameworks pytorch --strategies ddp,fsdp,fsdp-grad-op,zero1 --model gpt2-xl \
  --steps 10 --repeat 1 --init framework
part xl && compare xl-keras-jax --frameworks keras-jax --strategies jax-dp,jax-fsdp --model gpt2-xl \
  --steps 10 --repeat 1 --init framework
