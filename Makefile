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

# Every benchmark runs even when one misses its target; the target fails at the end if any did.
BENCHMARKS := synth check_manifests simulate
bench: $(VENV)/.installed
	@missed=""; for b in $(BENCHMARKS); do echo "== benchmarks/$$b.py"; \
	  $(PY) benchmarks/$$b.py || missed="$$missed $$b"; done; \
	if [ -n "$$missed" ]; then echo "target missed or benchmark failed:$$missed"; exit 1; fi; \
	echo "every benchmark met its target"

.PHONY: install plan test bench
