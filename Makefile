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

# Wheels of the package's runtime dependencies (pinned by requirements.txt) and of its build backend: the tests
# that build fresh virtualenvs (a consumer project, the policy pack) install from here, not from an index.
WHEELHOUSE := $(VENV)/wheelhouse
$(WHEELHOUSE)/.complete: $(VENV)/.installed
	$(PY) -m pip wheel -q --wheel-dir $(WHEELHOUSE) -c requirements.txt . "setuptools>=77" pip
	touch $@

install: $(VENV)/.installed $(WHEELHOUSE)/.complete

plan: $(VENV)/.installed
	$(VENV)/bin/gpuplatform plan --stack $(STACK) --out build/plan-$(STACK)

test: $(VENV)/.installed $(WHEELHOUSE)/.complete
	GPUPLATFORM_WHEELHOUSE=$(WHEELHOUSE) $(PY) -m pytest -n 2 -q

bench: $(VENV)/.installed
	$(PY) benchmarks/synth.py
	$(PY) benchmarks/check_manifests.py
	$(PY) benchmarks/simulate.py

.PHONY: install plan test bench
