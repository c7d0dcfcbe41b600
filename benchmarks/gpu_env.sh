# Sourced by the GPU benchmark scripts on the GPU machine, from the repo root: the wheels in
# .whl/ (keras, namex, optree) into /tmp/site, mgbench importable, NVLink multicast off,
# unbuffered output, and OUT (where the machine hands files back) defaulting to /tmp/out.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
# The image keeps no compiled bytecode of its packages, so every process compiled the sources it
# imports again at its start (benchmarks/RUNS.md, run aj): compiled once into /tmp/pycache instead.
export PYTHONPYCACHEPREFIX=/tmp/pycache
unset PYTHONDONTWRITEBYTECODE
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
  # Once per set of wheels: a script that sources this from another (gpu_decode.sh's ceiling part) skips it.
  if [ "$(ls .whl/*.whl)" != "$(cat /tmp/site/.wheels 2>/dev/null)" ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
    ls .whl/*.whl >/tmp/site/.wheels
  fi
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
