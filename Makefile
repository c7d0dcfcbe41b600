# Two commands do all the set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEMO_OUT ?= runs/demo

# Framework environments the tests need beyond .venv (each .venvs/<env>, stamped when built).
# About a minute each from a pip mirror; pytorch runs from .venv itself.
FRAMEWORK_ENVS := keras-tf keras-jax

.PHONY: demo test envs env-%

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

test: $(STAMP) envs
	$(PY) -m pytest -q

## Build the framework environments the tests use (idempotent: rebuilt only when requirements change).
envs: $(FRAMEWORK_ENVS:%=.venvs/%/.installed)

.venvs/%/.installed: requirements/%.txt requirements/base.txt pyproject.toml | $(STAMP)
	$(VENV)/bin/mgbench setup $*
	touch $@

## Per-framework environment, e.g. `make env-keras` or `make env-keras-tf` (same as `mgbench setup NAME`).
env-%: $(STAMP)
	$(VENV)/bin/mgbench setup $*
