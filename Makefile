# Two commands do all the set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEMO_OUT ?= runs/demo

.PHONY: demo test env-% env-horovod-ci

$(STAMP): pyproject.toml requirements/base.txt requirements/pytorch.txt requirements/dev.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -r requirements/base.txt -r requirements/pytorch.txt -r requirements/dev.txt
	$(PY) -m pip install -q --no-deps -e .
	touch $(STAMP)

## Small compare on whatever devices exist (CPU devices stand in for GPUs when there is none).
demo: $(STAMP)
	$(VENV)/bin/mgbench compare --frameworks pytorch --gpus 2 --model densenet121 --image-size 64 \
		--batch-per-gpu 8 --steps 30 --out $(DEMO_OUT)
	@echo "report folder: $(DEMO_OUT)"

test: $(STAMP)
	$(PY) -m pytest -q

## Per-framework environment, e.g. `make env-pytorch` (same as `mgbench setup pytorch`).
env-%: $(STAMP)
	$(VENV)/bin/mgbench setup $*

## Horovod's environment behind a stamp, so `make test` can depend on it (CI covers the build).
## Horovod is built from source once (~7 min on 2 cores, ~10 min with the env); its wheel is cached
## in ~/.cache/mgbench/wheels, so a rebuilt env takes the time of installing torch.
HOROVOD_STAMP := .venvs/horovod/.installed
$(HOROVOD_STAMP): $(STAMP) requirements/horovod.txt requirements/pytorch.txt requirements/base.txt \
		scripts/build_horovod.sh patches/horovod-0.28.1-torch2.patch
	$(VENV)/bin/mgbench setup horovod
	touch $@

env-horovod-ci: $(HOROVOD_STAMP)
