#!/usr/bin/env bash
# Where the adapter's DDP loses time against the plain loop: host feed vs device data, with and
# without the parent's monitor (a bare torchrun launch has none). Device machine, repo root.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 PYTHONPATH=$PWD PYTHONUNBUFFERED=1
MODEL=${MODEL:-densenet121}
JOB="--framework pytorch --strategy ddp --gpus 1 --model $MODEL --precision bf16 --data-format channels_last --batch-per-gpu 128 --steps ${STEPS:-60}"
row() { grep -E "│ pytorch" | sed "s/^/$1 /"; }
python3 -m mgbench run $JOB --out runs/v-host 2>&1 | row host-fed
python3 -m mgbench run $JOB --data-on-device --out runs/v-dev 2>&1 | row on-device
python3 -m torch.distributed.run --standalone --nproc-per-node 1 -m mgbench run $JOB 2>&1 | row no-monitor
python3 -m torch.distributed.run --standalone --nproc-per-node 1 benchmarks/plain_ddp.py --model $MODEL --batch 128 2>&1 | grep plain-ddp
