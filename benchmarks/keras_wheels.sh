# Sourced from the repo root by the GPU scripts that run keras-jax: the device machine's image has
# JAX with CUDA but no Keras, so Keras, namex and optree travel as wheels in .whl/ (BENCHMARKS.md),
# installed here under /tmp/site, which goes on PYTHONPATH with this checkout.
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
