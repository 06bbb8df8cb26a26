# Two entry points: `make plan` (offline plan of the dev stack) and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
STACK ?= dev
# The upstream chart packages the render tests give to the real Helm engine: a directory named in the
# environment, else ../shared/charts when it sits beside the checkout, else `make charts` fetches them into charts/.
GPUPLATFORM_CHARTS_DIR ?= $(if $(wildcard ../shared/charts/*.tgz),$(abspath ../shared/charts),$(if $(wildcard charts/*.tgz),$(abspath charts)))
export GPUPLATFORM_CHARTS_DIR

$(VENV)/.installed: requirements.txt pyproject.toml
	@echo "installing $(VENV) with the pinned dependencies (first run, or requirements changed: a minute or two)"
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps -e .
	touch $@

# Wheels of the package's dependencies with its `stack` extra (pinned by requirements.txt) and of its build backend:
# the tests that build fresh virtualenvs (a consumer project, the policy pack) install from here, not from an index.
WHEELHOUSE := $(VENV)/wheelhouse
$(WHEELHOUSE)/.complete: $(VENV)/.installed
	@echo "collecting wheels into $(WHEELHOUSE) for the tests that build fresh virtualenvs (first run: a minute or two)"
	$(PY) -m pip wheel -q --wheel-dir $(WHEELHOUSE) -c requirements.txt ".[stack]" "setuptools>=77" pip
	@# dependencies only: every test that installs gpu-platform builds it from the checkout it tests, and one
	@# proves a bare `gpu-platform==<version>` resolves to whatever an index offers (no copy of ours may answer)
	rm -f $(WHEELHOUSE)/gpu_platform-*.whl
	touch $@

install: $(VENV)/.installed $(WHEELHOUSE)/.complete

plan: $(VENV)/.installed
	$(VENV)/bin/gpuplatform plan --stack $(STACK) --out build/plan-$(STACK)

# The engines the rehearsal and the engine tests run (engines/versions.env), built from the Go module proxy into a
# cache keyed by version (engines/build): the first build takes a while and says so; later runs build nothing.
engines:
	@bash engines/build

# The unit suite first, then the tests that run the real engines (marker `realengines`).
# -rs: the reason of every skip (a missing tool or chart directory, and how to get it)
test: $(VENV)/.installed $(WHEELHOUSE)/.complete engines
	@echo "chart packages: $(or $(GPUPLATFORM_CHARTS_DIR),none (the Helm render tests skip; see make charts))"
	GPUPLATFORM_WHEELHOUSE=$(WHEELHOUSE) $(PY) -m pytest -n 2 -rs -m "not realengines"
	GPUPLATFORM_ENGINES_BIN=$$(bash engines/build --dir) GPUPLATFORM_WHEELHOUSE=$(WHEELHOUSE) \
	  $(PY) -m pytest -n 2 -rs -m realengines

# The autoscaling chain on the real controllers (kwok pods, emulated servers, Prometheus, prometheus-adapter, the HPA
# controller, Karpenter for the node-autoscaling scenarios) against `simulate` on the same arrivals, one scenario
# after another (four to seven minutes of real time each; root for the control plane's network namespace; the
# engines' Prometheus 3.14.0): prints the agreement table and, for the two-workload scenario, `simulate --tune`'s
# placeholders against minReplicas (docs/real-loop.md). SCENARIOS=name... runs only those.
real-loop: $(VENV)/.installed engines
	GPUPLATFORM_ENGINES_BIN=$$(bash engines/build --dir) $(PY) -m gpuplatform.realloop $(SCENARIOS)

# Fetch the pinned chart packages with `helm pull` (needs helm and network) into charts/.
charts: $(VENV)/.installed
	$(PY) -m gpuplatform.fetch_charts charts

# Every benchmark runs even when one misses its target; the target fails at the end if any did.
BENCHMARKS := synth check_manifests simulate tune pack_install import_graph
bench: $(VENV)/.installed $(WHEELHOUSE)/.complete
	@missed=""; for b in $(BENCHMARKS); do echo "== benchmarks/$$b.py"; \
	  $(PY) benchmarks/$$b.py || missed="$$missed $$b"; done; \
	if [ -n "$$missed" ]; then echo "target missed or benchmark failed:$$missed"; exit 1; fi; \
	echo "every benchmark met its target"

# The figures docs/simulate.md shows, drawn by `gpuplatform simulate --plot` (matplotlib: the plot extra, which
# requirements.txt pins). Redraw them after a change to the simulator or the plot; each stays under 150 KB.
FIGURES := docs/figures
figures: $(VENV)/.installed
	$(VENV)/bin/gpuplatform simulate --stack prod --workload flower --trace step --plot $(FIGURES)/prod-flower-step.png >/dev/null
	$(VENV)/bin/gpuplatform simulate --stack dev --workload bert-intent-detection --trace spike --plot $(FIGURES)/dev-bert-spike.png >/dev/null
	$(VENV)/bin/gpuplatform simulate --stack local --workload batch-embedder --trace $(FIGURES)/quiet-hour.csv --duration 40m --plot $(FIGURES)/local-embedder-quiet-hour.png >/dev/null

.PHONY: install plan test engines bench charts figures real-loop
