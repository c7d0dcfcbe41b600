#!/usr/bin/env bash
# --compile on the GPU machine's GPUs, from the repo root (writes under $OUT). Per model, one
# compare runs PyTorch ddp compiled (torch.compile in MODE) and keras-jax jax-shard-map (always
# XLA) on 1 and N GPUs; a second runs PyTorch ddp eager on the same machine (EAGER=0 skips it).
# In a MODE XLA does not have, keras-jax runs in a compare of its own without --compile, in the
# same command, so the compiled rows still have their reference.
# Uses the machine's python3 (PyTorch, JAX with CUDA) and the Keras wheels in .whl/ (gpu_env.sh);
# a second run on one machine starts its folders afresh.
# MODE is a torch.compile mode (reduce-overhead: CUDA graphs); XLA has only `default`, so other
# modes would make keras-jax's rows `unsupported` (hence its own compare above). Inductor caches
# compiled graphs on disk, so a model's second run may compile from the first's cache: COLD=1
# switches the caches off, so every row's compile_seconds is a compile from scratch. Scale with
# MODELS, STEPS, BATCH; FRAMEWORKS and EAGER_FRAMEWORKS name each compare's frameworks
# (keras-torch compiles too).
set -uo pipefail
source benchmarks/gpu_env.sh
[ -n "${COLD:-}" ] && export TORCHINDUCTOR_FORCE_DISABLE_CACHES=1
command -v "${CC:-cc}" >/dev/null || command -v gcc >/dev/null || echo "no C compiler: Triton needs one (set CC) to build its launchers"
N=$(python3 -c 'import torch; print(torch.cuda.device_count())')
python3 -c 'import torch, jax; print("torch", torch.__version__, "cuda", torch.version.cuda, "jax", jax.__version__)'
JOB="--precision bf16 --data-format channels_last --batch-per-gpu ${BATCH:-128} --steps ${STEPS:-60} --gpus 1,$N"
MODE=${MODE:-default}
if [ "$MODE" = default ]; then COMPILED=${FRAMEWORKS:-pytorch,keras-jax} XLA=; else COMPILED=${FRAMEWORKS:-pytorch} XLA=keras-jax; fi
for model in ${MODELS:-resnet50 densenet121}; do
  rm -rf runs/compile-$model runs/eager-$model runs/xla-$model
  python3 -m mgbench compare --frameworks $COMPILED $JOB --model $model --compile $MODE \
    --out runs/compile-$model 2>&1 | grep -E "│ [a-z]|rror"
  [ -n "$XLA" ] && python3 -m mgbench compare --frameworks $XLA $JOB --model $model \
    --out runs/xla-$model 2>&1 | grep -E "│ [a-z]|rror"
  [ "${EAGER:-1}" = 1 ] && python3 -m mgbench compare --frameworks ${EAGER_FRAMEWORKS:-pytorch} $JOB --model $model \
    --out runs/eager-$model 2>&1 | grep -E "│ [a-z]|rror"
  tar czf $OUT/compile-$model.tgz --exclude="*-trace.json" runs/compile-$model $(ls -d runs/eager-$model runs/xla-$model 2>/dev/null)
done
