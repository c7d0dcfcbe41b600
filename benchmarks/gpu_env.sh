# Sourced by the GPU benchmark scripts on the device machine, from the repo root: the carried
# wheels (.whl/: keras, namex, optree, nvImageCodec) into /tmp/site, mgbench importable, NVLink multicast off,
# unbuffered output, and OUT (where the machine hands files back) defaulting to /tmp/out.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  # nvImageCodec's wheel makes `nvidia` a regular package, which would hide the image's CUDA
  # libraries under the same namespace (nvidia/cu13, as torch's and JAX's wheels install them).
  rm -f /tmp/site/nvidia/__init__.py
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
