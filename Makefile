# Two commands do all the set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEMO_STAMP := $(shell date +%Y%m%d-%H%M%S)
DEMO_OUT ?= runs/demo-$(DEMO_STAMP)

VENVS := .venvs
## Set-up is one line per environment; pip's output goes to $(LOGS)/<environment>.log.
LOGS := $(VENVS)/logs
QUIETLY := scripts/quietly.sh
## Framework environments `make test` builds first (each rebuilt only when its requirements change).
TEST_ENVS := gluon chainer horovod keras-tf keras-jax keras-torch

.PHONY: demo test browser env-% mpi

## .venv is the pytorch framework's environment too: its loaders get pillow-simd where this machine
## can compile it, as `mgbench setup` gives every framework environment (mgbench/runner/pillow_simd.py).
$(STAMP): pyproject.toml requirements/base.txt requirements/pytorch.txt requirements/dev.txt requirements/pillow-simd.txt
	@$(QUIETLY) "$(VENV) (pytorch)" $(LOGS)/pytorch.log sh -c '$(PYTHON) -m venv $(VENV) \
		&& $(PY) -m pip install -r requirements/base.txt -r requirements/pytorch.txt -r requirements/dev.txt \
		&& $(PY) -m pip install --no-deps -e . && $(PY) -m mgbench.runner.pillow_simd $(PY)'
	@touch $(STAMP)

## The command mgbench exists for, as typed, on whatever devices exist (CPU devices stand in for
## GPUs when there is none, with a job shrunk to end in minutes).
DEMO_ENVS := keras-tf keras-jax keras-torch
demo: $(STAMP) $(DEMO_ENVS:%=$(VENVS)/%/.installed)
	$(VENV)/bin/mgbench compare --frameworks keras,pytorch --gpus 2 --out $(DEMO_OUT)
	@echo "report folder: $(DEMO_OUT)"

test: $(STAMP) browser $(TEST_ENVS:%=$(VENVS)/%/.installed)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(PY) -m pytest -q

## Headless Chromium for the report rendering test: installed with apt when missing and we are root.
browser:
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null \
		&& apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
		|| echo "chromium is missing: the report rendering test will skip"

## Per-framework environment, e.g. `make env-pytorch` (same as `mgbench setup pytorch`).
env-%: $(VENVS)/%/.installed
	@echo "$*: $(VENVS)/$*/bin/python"

$(VENVS)/%/.installed: requirements/%.txt requirements/base.txt requirements/pillow-simd.txt pyproject.toml | $(STAMP)
	@$(QUIETLY) $* $(LOGS)/$*.log $(VENV)/bin/mgbench setup $*
	@touch $@

$(VENVS)/chainer/.installed: requirements/chainer-build-constraints.txt | mpi

## ChainerMN needs an MPI (mpi4py links it, mpiexec launches the processes): Debian's Open MPI,
## installed when mpiexec is missing and we are root; otherwise the chainer tests skip, saying why.
mpi:
	@command -v mpiexec >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openmpi-bin libopenmpi-dev; } || \
		echo "warning: no mpiexec and cannot apt-get install openmpi-bin libopenmpi-dev: chainer runs will be skipped"

## Horovod is built from source by `mgbench setup horovod` (scripts/build_horovod.sh, ~7 min on 2 cores
## once); its wheel is cached in ~/.cache/mgbench/wheels, so a rebuilt env takes the time of installing torch.
$(VENVS)/horovod/.installed: scripts/build_horovod.sh patches/horovod-0.28.1-torch2.patch requirements/pytorch.txt requirements/base.txt
