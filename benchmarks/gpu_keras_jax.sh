#!/usr/bin/env bash
# GPU benchmark: Keras 3 over JAX on every GPU of the GPU machine, from the repo root
# (writes under $OUT). The image has JAX with CUDA; Keras, namex and optree travel as wheels in
# .whl/ (see BENCHMARKS.md). jax-shard-map runs on 1 and N GPUs; jax-dp (Keras' DataParallel,
# the same computation on 1 GPU) on N; with RESIDENT=1 also jax-shard-map on N with the batches
# already on the GPUs (the compute-only ceiling). Scale with MODELS, STEPS, BATCH; XLA_FLAGS
# passes through.
set -uo pipefail
source benchmarks/gpu_env.sh
N=$(python3 -c 'import jax; print(len(jax.devices("gpu")))')
KERAS_BACKEND=jax python3 -c 'import jax, jaxlib, keras; print("jax", jax.__version__, "jaxlib", jaxlib.__version__, "keras", keras.__version__)'
JOB="--frameworks keras-jax --precision bf16 --data-format channels_last --batch-per-gpu ${BATCH:-128} --steps ${STEPS:-60} --timeout 400"
for model in ${MODELS:-resnet50 densenet121}; do
  python3 -m mgbench compare $JOB --model $model --strategies jax-shard-map --gpus 1,$N --out runs/kjax-$model 2>&1 | grep -E "│ keras|rror"
  python3 -m mgbench compare $JOB --model $model --strategies jax-dp --gpus $N,$N --out runs/kjax-$model-dp 2>&1 | grep -E "│ keras|rror"
  [ -n "${RESIDENT:-}" ] && python3 -m mgbench compare $JOB --model $model --strategies jax-shard-map --gpus $N,$N \
    --data-on-device --out runs/kjax-$model-resident 2>&1 | grep -E "│ keras|rror"
done
tar czf "$OUT/keras-jax.tgz" runs/kjax-*
