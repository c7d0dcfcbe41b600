# Two commands do all the set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEMO_OUT ?= runs/demo

.PHONY: demo test browser env-%

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

test: $(STAMP) browser
	$(PY) -m pytest -q

## Headless Chromium for the report rendering test: installed with apt when missing and we are root.
browser:
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null \
		&& apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
		|| echo "chromium is missing: the report rendering test will skip"

## Per-framework environment, e.g. `make env-pytorch` (same as `mgbench setup pytorch`).
env-%: $(STAMP)
	$(VENV)/bin/mgbench setup $*
