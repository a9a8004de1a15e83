# evalkit. The two commands the README gives:
#   make all    set up .venv, execute every notebook headless into build/html and write the
#               reproduction report into build/report
#   make test   set up .venv and run every test (tests/ and, through nbval, notebooks/)
# Other targets: make lab, make bench, make lint, make typecheck, make clean, make distclean, make help.
# Run make from the repository root (or with `make -C path/to/evalkit`).

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := all
.DELETE_ON_ERROR:

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# Written after a successful install; reinstalls only when pyproject.toml changes.
STAMP := $(VENV)/.evalkit-install.stamp
BENCH_STAMP := $(VENV)/.evalkit-bench.stamp

# Data: the repository's data/ holds every dataset and evalkit finds it by itself, so nothing is
# set here. A user's EVALKIT_DATA (another copy, searched first) is passed on; a single relative
# folder is made absolute, because notebooks run with notebooks/ as their cwd.
ifneq ($(strip $(EVALKIT_DATA)),)
EVALKIT_DATA := $(if $(findstring :,$(EVALKIT_DATA)),$(EVALKIT_DATA),$(abspath $(EVALKIT_DATA)))
export EVALKIT_DATA
endif

# Kernels: look in the venv's kernel specs first, so that the `python3` kernel is the venv's
# python even if the user has another `python3` kernel installed.
export JUPYTER_PATH := $(CURDIR)/$(VENV)/share/jupyter$(if $(JUPYTER_PATH),:$(JUPYTER_PATH),)
export PIP_DISABLE_PIP_VERSION_CHECK := 1

# Per-cell time limit (seconds) for headless notebook runs; pytest's nbval limit is in pyproject.
CELL_TIMEOUT ?= 600
# pytest runs on two workers (pytest-xdist), one notebook or test file per worker: the suite
# (notebooks and the browser test included) then fits well inside CI's time on 2 cores. Every test
# and notebook is seeded, so the results do not depend on how the files are split between workers.
# `make test PYTEST_ARGS=` runs it in one process.
PYTEST_ARGS ?= -n 2 --dist loadfile
# One BLAS thread per process under `make test` and `make all`. Two pytest workers (and the notebook
# kernels they start) on 2 cores, each with OpenBLAS's default of one thread per core, oversubscribe
# the machine, and OpenBLAS's waiting threads then slow everything down (the factor-model CV of
# notebook 06 took 58 s with 2 threads and 16.5 s with 1 while another process used the other core).
# It also makes the numbers independent of the machine: a sum split over a different number of
# threads can differ in its last digits, and a long fit (notebook 06's L-BFGS factor model) or a
# choice between near-equal options can amplify that. `make test BLAS_THREADS=2` lifts it.
BLAS_THREADS ?= 1
# The OpenBLAS kernel, on x86-64 machines with AVX2 and FMA: Haswell's, whatever the CPU. OpenBLAS
# picks its float32 matrix-product kernel by CPU (Haswell, SkylakeX, Zen and more), and the kernels round
# a row's products differently. Most results agree to every printed digit anyway, but FAQ's adaptive
# draws (06.2-06.5) turn a last-bit difference into another item drawn, and so into another,
# statistically equivalent, run: FAQ's ESS on 06.2's reduced problem is 2.528 with the Haswell
# kernel and 2.038 with SkylakeX's. Pinning the kernel makes `make all`, `make test` and `make lab`
# print the saved outputs on any such machine. A value set by the caller is kept; `make test
# OPENBLAS_CORETYPE=` lifts the pin.
ifeq ($(origin OPENBLAS_CORETYPE),undefined)
OPENBLAS_CORETYPE := $(shell grep -qw avx2 /proc/cpuinfo 2>/dev/null && grep -qw fma /proc/cpuinfo 2>/dev/null && echo Haswell)
endif
ifneq ($(strip $(OPENBLAS_CORETYPE)),)
export OPENBLAS_CORETYPE
endif
NOTEBOOKS := $(sort $(wildcard notebooks/*.ipynb))
REPORT_ROWS := $(CURDIR)/build/report/rows

.PHONY: all report test lab bench lint typecheck setup clean distclean help

all: report ## set up, run every notebook into build/html, write build/report/reproduction_report.*

setup: $(STAMP) ## create .venv and install evalkit with its dev extras

$(PY):
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
	  || { echo "evalkit needs Python >= 3.11; '$(PYTHON)' is older (set PYTHON=...)" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --progress-bar off -e ".[dev]"
	@touch $@

# Headless plotting: plain python processes (benchmarks; pytest itself via tests/conftest.py) use
# MPLBACKEND=Agg. Notebook kernels must NOT inherit it: with MPLBACKEND=Agg ipykernel drops its
# inline backend and no figure reaches the notebook or the HTML. Hence `env -u MPLBACKEND` below.
test: $(STAMP) ## set up, lint (ruff), type-check (mypy), run every test: tests/ and every notebook (nbval)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	@# The browser test runs last and alone: it times every widget redraw as a learner sees it, which
	@# a notebook running on the other worker would slow down.
	@rc=0; env -u MPLBACKEND OPENBLAS_NUM_THREADS=$(BLAS_THREADS) OMP_NUM_THREADS=$(BLAS_THREADS) \
	  MKL_NUM_THREADS=$(BLAS_THREADS) $(PY) -m pytest $(PYTEST_ARGS) -m "not browser" || rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: pytest collected no tests (exit 5); that is a failure" >&2; fi; \
	rb=0; env -u MPLBACKEND OPENBLAS_NUM_THREADS=$(BLAS_THREADS) OMP_NUM_THREADS=$(BLAS_THREADS) \
	  MKL_NUM_THREADS=$(BLAS_THREADS) $(PY) -m pytest -m browser tests/test_browser.py || rb=$$?; \
	if [ $$rc -ne 0 ]; then exit $$rc; fi; exit $$rb

report: $(STAMP) ## the same as make all
	@if [ -z "$(NOTEBOOKS)" ]; then echo "make report: no notebooks/*.ipynb to run" >&2; exit 1; fi
	rm -rf build/html build/report
	mkdir -p build/html $(REPORT_ROWS)
	@# scripts/execute_notebook.py is `jupyter nbconvert --to html --execute` whose waits for the kernel are
	@# loops of 1-second polls: a single long wait was seen to miss the kernel's reply on widget cells and sit
	@# out the whole cell timeout (nbclient issue 312). A notebook that still fails is tried once more.
	@for nb in $(NOTEBOOKS); do \
	  ok=0; \
	  for attempt in 1 2; do \
	    if env -u MPLBACKEND OPENBLAS_NUM_THREADS=$(BLAS_THREADS) OMP_NUM_THREADS=$(BLAS_THREADS) \
	      MKL_NUM_THREADS=$(BLAS_THREADS) EVALKIT_REPORT_DIR=$(REPORT_ROWS) $(PY) scripts/execute_notebook.py \
	      --timeout $(CELL_TIMEOUT) --output-dir build/html "$$nb"; then ok=1; break; fi; \
	    echo "make all: $$nb failed on attempt $$attempt" >&2; \
	  done; \
	  [ $$ok = 1 ] || exit 1; \
	done
	$(PY) -m evalkit.reproduce $(REPORT_ROWS) build/report

# JupyterLab refuses to run as root unless told; containers often are root.
LAB_ARGS ?= $(if $(filter 0,$(shell id -u)),--allow-root,)
lab: $(STAMP) ## open JupyterLab on notebooks/
	$(VENV)/bin/jupyter lab --ServerApp.root_dir=notebooks $(LAB_ARGS)

bench: export MPLBACKEND := Agg
bench: $(BENCH_STAMP) ## run every benchmarks/bench_*.py (installs the bench extras)
	@shopt -s nullglob; files=(benchmarks/bench_*.py); \
	if [ $${#files[@]} -eq 0 ]; then echo "make bench: no benchmarks/bench_*.py" >&2; exit 1; fi; \
	for f in "$${files[@]}"; do echo "== $$f"; $(PY) "$$f"; done

$(BENCH_STAMP): pyproject.toml $(STAMP)
	$(PY) -m pip install --progress-bar off -e ".[dev,bench]"
	@touch $@

lint: $(STAMP) ## ruff over the package, tests, benchmarks and notebooks
	$(VENV)/bin/ruff check .

typecheck: $(STAMP) ## mypy over the package (settings in pyproject.toml)
	$(VENV)/bin/mypy

clean: ## remove build outputs and caches (keeps .venv)
	rm -rf build .pytest_cache .ruff_cache .mypy_cache *.egg-info
	find . -path ./$(VENV) -prune -o \( -name __pycache__ -o -name .ipynb_checkpoints \) -type d -print \
	  | xargs -r rm -rf

distclean: clean ## clean, and remove .venv too
	rm -rf $(VENV)

help: ## list the targets
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z]+):.*## /  make \1\t/'
