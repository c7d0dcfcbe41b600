#!/usr/bin/env bash
# GPU benchmark of PyTorch's strategies, run on the GPU machine from the repo root (writes under $OUT).
# Uses the machine's own python3 (PyTorch, torchvision, pandas, rich, nvidia-ml-py are there).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 PYTHONPATH=$PWD PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
N=$(python3 -c 'import torch; print(torch.cuda.device_count())')
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem --format=csv
nvidia-smi topo -m
python3 -c 'import torch, torchvision; print("torch", torch.__version__, "torchvision", torchvision.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())'
[ -n "${GPU_TESTS:-}" ] && python3 -m pytest -q tests/test_gpu_data_parallel.py -k pytorch 2>&1 | tail -3
for model in ${MODELS:-resnet50 densenet121}; do
  for n in 1 $N; do python3 -m torch.distributed.run --standalone --nproc-per-node $n benchmarks/plain_ddp.py --model $model --batch 128 2>&1 | grep plain-ddp; done
  python3 benchmarks/dp_breakdown.py --model $model --batch-per-gpu 128 --gpus $N
  python3 -m mgbench compare --frameworks pytorch --gpus $N --model $model --precision bf16 \
    --data-format channels_last --batch-per-gpu 128 --steps ${STEPS:-80} --out runs/gpu-$model 2>&1 | tail -14
  tar czf $OUT/gpu-$model.tgz runs/gpu-$model
done
