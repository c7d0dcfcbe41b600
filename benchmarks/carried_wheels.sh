# Sourced by the GPU benchmark scripts (from the repo root): makes the wheels carried in
# ${DEPS:-.deps/gpu} (scripts/fetch_gpu_deps.sh fills it) importable by the image's python3.
# The device machine has no network and its python3 is the image's: each wheel whose
# distribution python3 lacks is installed into ${SITE:-/tmp/site}, which goes first on
# PYTHONPATH with this checkout; what the image already has is left as it is.
DEPS=${DEPS:-.deps/gpu}
SITE=${SITE:-/tmp/site}
missing=()
for wheel in "$DEPS"/*.whl; do
  [ -e "$wheel" ] || continue
  python3 -c 'import importlib.metadata as m, sys; m.version(sys.argv[1])' "$(basename "$wheel" | cut -d- -f1)" 2>/dev/null \
    || missing+=("$wheel")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing into $SITE: ${missing[*]##*/}"
  PIP_ROOT_USER_ACTION=ignore python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target "$SITE" "${missing[@]}" || exit 1
fi
export PYTHONPATH=$SITE:$PWD
