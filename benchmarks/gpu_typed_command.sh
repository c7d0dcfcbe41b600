#!/usr/bin/env bash
# The command mgbench exists for, as a new user types it on one GPU, with the closing lines it
# prints (estimate, total, lines without a figure, exit status) kept whole. From the repo root
# with the Keras wheels in .whl/; each part writes its run folder under $OUT as it goes, so a
# part cut off by the machine's limit still hands back the rows it wrote. Parts (PART, one a call
# on a machine kept warm between calls, so the second finds the caches the first filled):
#   first   `mgbench compare --frameworks keras,pytorch --gpus 1` on a machine with empty caches
#   second  the same command again on the same machine: what the compile caches and the estimate
#           from earlier runs give
#   limited the same command with every framework capped at GPU_GB (default 24) GB of GPU memory
#           (`--gpu-memory-gb`), as on a 24 GB card, and REPEAT (default 1) rounds
#   CODE=<commit> runs that commit's tree (exported from the carried .git into /tmp/code) instead
#           of the working tree handed over; where the machine's copy of .git lacks the commit
#           (seen 2026-12-07 on a 1x H100), git says so and nothing runs: run without CODE from
#           a clean working tree at that commit
set -uo pipefail
if [ -n "${CODE:-}" ]; then
  rm -rf /tmp/code && mkdir -p /tmp/code && git archive "$CODE" | tar -x -C /tmp/code || exit 1
  [ -d .whl ] && cp -r .whl /tmp/code/
  export OUT
  cd /tmp/code && echo "code: $CODE"
fi
source benchmarks/gpu_env.sh
PART=${PART:-first}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -c 'import torch, jax; print("torch", torch.__version__, "cuda", torch.version.cuda, "jax", jax.__version__)'
du -sh ~/.cache/mgbench 2>/dev/null || echo "no ~/.cache/mgbench yet"
options=()
[ "$PART" = limited ] && options=(--gpu-memory-gb "${GPU_GB:-24}" --repeat "${REPEAT:-1}")
start=$SECONDS
python3 -m mgbench compare --frameworks keras,pytorch --gpus 1 "${options[@]}" --out "$OUT/typed-$PART" \
  >"$OUT/typed-$PART.console" 2>&1
status=$?
grep -vE "^\s*$" "$OUT/typed-$PART.console" | tail -n 45
echo "part $PART: exit $status, $(( SECONDS - start )) s wall"
du -sh ~/.cache/mgbench/* 2>/dev/null
