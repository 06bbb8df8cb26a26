# Two entry points: `make plan` (offline plan of the dev stack) and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
STACK ?= dev

$(VENV)/.installed: requirements.txt pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps -e .
	touch $@

install: $(VENV)/.installed

plan: $(VENV)/.installed
	$(VENV)/bin/gpuplatform plan --stack $(STACK) --out build/plan-$(STACK)

test: $(VENV)/.installed
	$(PY) -m pytest -n 2 -q

bench: $(VENV)/.installed
	$(PY) benchmarks/synth.py
	$(PY) benchmarks/check_manifests.py

.PHONY: install plan test bench
