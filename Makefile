# Forge: `make test` runs every test, `make demo` shows the compiler on a bundled example.
# Both create (or reuse) .venv and install Forge into it first.

PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
# The exact versions installed (pip constraints; LOCK= installs the newest releases pyproject allows).
LOCK_FILE := requirements/lock.txt
LOCK ?= $(LOCK_FILE)
PIP_INSTALL := $(if $(LOCK),pip install -c $(LOCK),pip install --upgrade --upgrade-strategy eager)
# Installed once; redone when pyproject.toml or the lock changes (or after `make clean-venv`).
STAMP := $(VENV)/.forge-installed
BENCH_STAMP := $(VENV)/.forge-bench-installed
# The optimization passes, each once (forge/pipelines.py); read when opt-demo runs, after install.
DEMO_PIPELINE ?= $(shell $(BIN)/python -c 'from forge.pipelines import OPTIMIZATION_PASSES as p; print(",".join(p))')

export PIP_ROOT_USER_ACTION := ignore
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: install nnfactory lint test test-latest lock demo opt-demo docs bench coverage compat fuzz clean-venv

install: $(STAMP)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# torch is pinned and installed first: a looser spec pulls a multi-GB CUDA build.
$(STAMP): pyproject.toml $(LOCK) | $(BIN)/python
	$(BIN)/python -m $(PIP_INSTALL) 'torch==2.13.0'
	$(BIN)/python -m $(PIP_INSTALL) -e '.[dev]'
	touch $@

# The optional nnfactory runtime (Intel's NNFactory built from its sdist); idempotent, ~1 s when
# already installed. Tests then require it (FORGE_REQUIRE_NNFACTORY=1) instead of skipping it.
nnfactory: $(STAMP)
	PYTHON=$(CURDIR)/$(BIN)/python scripts/install_nnfactory.sh

# pytest runs on PYTEST_WORKERS processes (pytest-xdist), whole files per worker (`--dist loadfile`: a
# module-scoped fixture, e.g. the benchmark smoke test's ~4-minute run of every section, runs once).
PYTEST_WORKERS ?= 2

# ruff (lint + import order) and lint-imports (the layer contracts in pyproject.toml) run first,
# then pytest, lit and xDSL's own suite (make compat); all five run and the target fails if any fails (a pytest exit code 5,
# "no tests collected", counts as a failure too).
test: $(STAMP) nnfactory
	@status=0; \
	$(BIN)/ruff check . || status=$$?; \
	$(BIN)/lint-imports --no-cache || status=$$?; \
	FORGE_REQUIRE_NNFACTORY=1 $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile || status=$$?; \
	$(BIN)/lit -v filecheck/ || status=$$?; \
	$(BIN)/python scripts/compat/run.py || status=$$?; \
	if [ $$status -ne 0 ]; then echo "make test: FAILED (exit $$status)" >&2; fi; \
	exit $$status

# The suite on the newest releases pyproject allows (its own venv, .venv-latest, upgraded on every run):
# drift in a dependency shows up as a named failure here before it reaches the lock. Not part of `make test`.
LATEST_VENV := .venv-latest
test-latest:
	rm -f $(LATEST_VENV)/.forge-installed
	$(MAKE) test VENV=$(LATEST_VENV) LOCK=

# Refresh the lock from what `make test-latest` installed (run it first; commit requirements/lock.txt after).
lock:
	@test -x $(LATEST_VENV)/bin/python || { echo "make lock: run make test-latest first" >&2; exit 1; }
	{ sed -n '/^#/p' $(LOCK_FILE); $(LATEST_VENV)/bin/python -m pip freeze --exclude-editable \
	  | grep -v '^intel.npu.acceleration.library' | sed 's/^torch==\([0-9.]*\)+cpu$$/torch==\1/'; } > $(LOCK_FILE).new
	mv $(LOCK_FILE).new $(LOCK_FILE)

# xDSL's own lit suite (its sdist's tests/filecheck, downloaded from PyPI into out/compat/) with
# forge-opt in place of xdsl-opt: everything must pass but scripts/compat/expected-failures.txt.
# Part of `make test`; COMPAT_ARGS=--all for the whole suite, --baseline for the real xdsl-opt.
compat: $(STAMP)
	$(BIN)/python scripts/compat/run.py $(COMPAT_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports --no-cache

demo: $(STAMP)
	@mkdir -p out
	$(BIN)/forge compile gpt2 --check --report out/gpt2-report.json

opt-demo: $(STAMP)
	$(BIN)/forge-opt examples/demo.mlir -p $(DEMO_PIPELINE) --timing

docs: $(STAMP)
	$(BIN)/python -m forge.driver.docs_gen

# Benchmarks against OpenVINO, ONNX Runtime and torch.compile (~20 min on 2 cores); writes
# docs/benchmarks.md, docs/benchmarks/*.png and out/bench/results.json. BENCH_ARGS=--quick for a
# smoke run, BENCH_ARGS='--only latency' for one section. Never part of `make test`.
# Cold compiles are measured as an installed user runs them: the project's bytecode is compiled
# first and PYTHONDONTWRITEBYTECODE is unset, else every fresh process would recompile Forge's
# sources in every process (hundreds of ms of a cold compile, a cost no installed user pays).
bench: $(BENCH_STAMP) nnfactory
	$(BIN)/python -m compileall -q forge dialects lowering backends bench
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python bench/run_all.py $(BENCH_ARGS)

# The benchmarks' extra peers (pyproject's `bench` extra: torch-mlir), on top of the dev install.
$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m $(PIP_INSTALL) -e '.[dev,bench]'
	touch $@

# The OpInfo coverage harness on every float32 sample of every entry (one batch module per entry, the
# interpreter and both runtimes) and the model zoo: writes docs/coverage.md (its header says how long it
# took). tests/coverage runs the same harness in `make test` on each entry's first 4 samples.
coverage: $(STAMP)
	$(BIN)/python -m forge.coverage --quiet --write docs/coverage.md

# The differential fuzz campaign (issue 28): every overload of the aten table to FUZZ_CASES generated
# cases on the interpreter and both runtimes, in FUZZ_JOBS worker processes; resumable (the state is
# tests/fuzz/campaign-state.json, kept in git: run it again, on any machine, to go on). Each new kind of failure is shrunk and saved under
# tests/fuzz/regressions/, which `make test` replays; then its table goes into docs/coverage.md.
# `make test` itself runs a fixed budget (forge/testing/fuzz/budget.py). FUZZ_ARGS: e.g. --hours 2,
# --ops aten::div.Scalar_mode,aten::amax.default.
FUZZ_CASES ?= 200
FUZZ_JOBS ?= 2
fuzz: $(STAMP) nnfactory
	$(BIN)/python -m forge.testing.fuzz --cases $(FUZZ_CASES) --jobs $(FUZZ_JOBS) $(FUZZ_ARGS)
	$(BIN)/python -m forge.testing.fuzz --docs $(FUZZ_ARGS)

clean-venv:
	rm -rf $(VENV)
