# The two commands a newcomer needs are `make html` and `make test`.
# Every target creates the virtual environment first when it is missing or
# older than requirements.txt / pyproject.toml.

PYTHON    ?= python3.11
VENV      ?= .venv
BIN       := $(VENV)/bin
BUILDDIR  := _build
HTMLDIR   := $(BUILDDIR)/html
SPHINX_ARGS := -c . -d $(BUILDDIR)/doctrees -b html docs $(HTMLDIR)
# The test build runs without a network: any download attempt fails it.
OFFLINE   ?= unshare -rn
PYTEST_ARGS ?=
# The test suite runs in this many processes (pytest-xdist), each test file
# in one of them: one per core, at most 4, since many tests lower models.
PYTEST_JOBS ?= $(shell n=$$(nproc); echo $$(( n < 4 ? n : 4 )))
# What the drift checker (python -m xnnguide.doccheck) reads (and xnnguide/tools/ci.py's DOCCHECK_PATHS).
DOCCHECK_PATHS := README.md docs snippets
# The checkout's xnnguide (the site's extension, checks and tools) is found
# through PYTHONPATH, in recipe worker processes too. It is deliberately not
# installed into $(VENV): a reader's environment has no xnnguide, and the
# tests that run code as a reader (tests/reader/) rely on
# dropping PYTHONPATH to get exactly that.
export PYTHONPATH := $(CURDIR)
# The environment is keyed by the content of the files that define it, not by
# their timestamps, so a fresh clone or a worktree reuses a matching .venv.
# REQUIREMENTS: the file the environment is made from; a release combination's own file for its
# environment (releases/combinations.toml, make matrix-venv), requirements.txt for the site's.
REQUIREMENTS ?= requirements.txt
ENV_KEY   := $(shell cat $(REQUIREMENTS) pyproject.toml | sha256sum | cut -c1-16)
ENV_STAMP := $(VENV)/.installed-$(ENV_KEY)
# The installer of the environment (make venv), pinned in requirements.txt with the packages it installs.
UV_VERSION := $(shell sed -n 's/^uv==//p' $(REQUIREMENTS))
# How uv_flags reads pip's configuration; a release combination that installs from PyPI alone (a torch above
# this machine's cap, or a CUDA build where the disk has a CPU one) sets it to ignore the machine's settings.
UV_FLAGS_ENV ?=

.DEFAULT_GOAL := help
.PHONY: help venv html merge-shards browser aarch64 linkcheck test check print-static-tests check-build recipe new-recipe bench serve clean distclean
.PHONY: matrix matrix-venv matrix-requirements

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  make %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

venv: $(ENV_STAMP) ## create or refresh the virtual environment

$(ENV_STAMP):
	@case "$(abspath $(VENV))" in $(CURDIR)/*) ;; *) \
	  echo "error: $(VENV) does not match $(REQUIREMENTS), and is outside this checkout; refusing to recreate it" >&2; exit 2;; esac
	@echo ">> creating $(VENV) from $(REQUIREMENTS) (first run takes a few minutes)"
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	@# uv installs the same pinned requirements as `pip install -r requirements.txt`, from the same files (the
	@# indexes and constraints of pip's configuration, xnnguide/tools/uv_flags.py), in a third of pip's time.
	@# These machines set PYTHONDONTWRITEBYTECODE=1, so the .pyc files the install writes are the only ones:
	@# without them every process would compile what it imports. compileall writes them with a process per
	@# core. Like pip, it passes over the modules this Python cannot compile (torch's tests of Python 3.12 syntax).
	$(BIN)/pip install --disable-pip-version-check --progress-bar off uv==$(UV_VERSION)
	$(BIN)/uv pip install --python $(BIN)/python $$($(UV_FLAGS_ENV) $(BIN)/python -m xnnguide.tools.uv_flags $(BIN)/pip) -r $(REQUIREMENTS)
	$(BIN)/python -c 'import compileall, sys; compileall.compile_dir(sys.argv[1], quiet=2, workers=0)' $(VENV)/lib
	touch $@

# `make html` runs the recipes that changed in JOBS shards side by side (one per core), each recipe under
# the watchdog, merges the shards into docs/gallery and writes the pages (xnnguide/site/run_shards.py).
# SHARD=k/N (a CI matrix job) runs shard k's recipes only and writes no page: their records and gallery
# outputs go to SHARD_DIR (default _build/shard-k-of-N), and `make merge-shards` combines the shards' folders.
JOBS      ?= $(shell nproc)
SHARD     ?=
SHARD_DIR ?=
SHARDS    ?=
RUN_SHARDS = $(BIN)/python -m xnnguide.site.run_shards --jobs $(JOBS)
html: venv ## build the site into _build/html, running every changed recipe; SHARD=k/N: shard k's recipes only
	$(RUN_SHARDS) $(if $(SHARD),--shard $(SHARD) $(if $(SHARD_DIR),--folder $(SHARD_DIR)),-- $(SPHINX_ARGS) -n --keep-going)

merge-shards: venv ## combine shard folders into docs/gallery, then `make html` runs no recipe: make merge-shards SHARDS="DIR..."
	@test -n "$(SHARDS)" || { echo "usage: make merge-shards SHARDS=\"_build/shard-1-of-2 _build/shard-2-of-2\"" >&2; exit 2; }
	$(BIN)/python -m xnnguide.core.shards $(SHARDS)

# The browser tests drive Debian's Chromium; install it (as root, with apt)
# when it is missing. It is a set-up step of `make test`, a prerequisite like
# venv, so that it runs before the offline build (it needs the network) and
# `make test` on a fresh machine still needs no other command. apt-get waits
# for another install that holds dpkg's lock (up to 10 minutes) instead of failing.
browser: ## install Chromium for the browser tests when it is missing (apt-get; needs root)
	@command -v chromium >/dev/null 2>&1 || { \
	  echo ">> installing Chromium for the browser tests"; \
	  if [ "$$(id -u)" != 0 ]; then echo "error: Chromium is missing; run as root or: sudo apt-get install -y chromium" >&2; exit 2; fi; \
	  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 update -q && \
	  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q chromium; }

# The ARM recipe (snippets/performance/run_pte_on_arm_under_qemu.py) cross-builds the C++ runner for aarch64
# and runs it under QEMU. Its tools are Debian's (installed with apt-get as root, like Chromium), its
# runtime the aarch64 build of the pinned executorch wheel, downloaded with pip and unpacked (not
# installed) into $(AARCH64_DIR). A set-up step of `make test`: the offline build downloads nothing.
# The recipe finds the unpacked wheel through EXECUTORCH_AARCH64.
AARCH64_DEBS := g++-aarch64-linux-gnu libc6-arm64-cross libstdc++-12-dev-arm64-cross qemu-user
ET_VERSION   := $(shell sed -n 's/^executorch==//p' requirements.txt)
AARCH64_DIR  ?= .aarch64/executorch-$(ET_VERSION)
export EXECUTORCH_AARCH64 := $(abspath $(AARCH64_DIR))/executorch
aarch64: venv ## install the ARM cross-compiler, QEMU and the aarch64 executorch wheel when missing (apt-get, pip; needs root)
	@command -v aarch64-linux-gnu-g++ >/dev/null 2>&1 && command -v qemu-aarch64 >/dev/null 2>&1 || { \
	  echo ">> installing the aarch64 cross-compiler and QEMU for the ARM recipe"; \
	  if [ "$$(id -u)" != 0 ]; then echo "error: the aarch64 tools are missing; run as root or: sudo apt-get install -y $(AARCH64_DEBS)" >&2; exit 2; fi; \
	  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 update -q && \
	  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends $(AARCH64_DEBS); }
	@test -f $(EXECUTORCH_AARCH64)/share/cmake/executorch-config.cmake || { \
	  echo ">> downloading executorch $(ET_VERSION) for manylinux_2_28_aarch64 into $(AARCH64_DIR)"; \
	  rm -rf $(AARCH64_DIR) $(AARCH64_DIR).download && \
	  $(BIN)/pip download --disable-pip-version-check --progress-bar off --no-deps --only-binary=:all: \
	    --platform manylinux_2_28_aarch64 --python-version 3.11 -d $(AARCH64_DIR).download executorch==$(ET_VERSION) && \
	  $(BIN)/python -m zipfile -e $(AARCH64_DIR).download/executorch-$(ET_VERSION)-*.whl $(AARCH64_DIR) && \
	  rm -rf $(AARCH64_DIR).download; }

linkcheck: venv ## check links between pages offline; external URLs are listed, not fetched
	$(OFFLINE) $(BIN)/sphinx-build -c . -d $(BUILDDIR)/doctrees -b linkcheck -q docs $(BUILDDIR)/linkcheck
	@echo ">> no broken links; $$(grep -c '"status": "ignored"' $(BUILDDIR)/linkcheck/output.json)" \
	  "external URL(s) listed, not fetched, in $(BUILDDIR)/linkcheck/output.json"

# make test's phases (offline strict build, drift checks, test suite, link check) are xnnguide/tools/ci.py,
# which .ci/run reaches through make test: it times them into _build/ci-times.tsv, keeps each phase's output in
# _build/ci-logs/<phase>.log and ends with where the time went (xnnguide/tools/ci_times.py).
DURATIONS ?= 15
# When make read this Makefile, before any prerequisite ran: make test's first phase, set-up,
# is the time from here to its recipe, which is what its prerequisites (venv, browser, aarch64) took.
MAKE_STARTED := $(shell date +%s%N)
test: venv browser aarch64 ## everything CI checks: set-up (venv, browser, aarch64), offline strict build, the test suite, link check; then where the time went
	$(BIN)/python -m xnnguide.tools.ci --started $(MAKE_STARTED) --offline "$(OFFLINE)" --jobs $(JOBS) \
	  --pytest-jobs $(PYTEST_JOBS) --durations $(DURATIONS) --pytest-args "$(PYTEST_ARGS)" --make "$(MAKE)"

# The static tests are the files that declare `pytestmark = pytest.mark.static` (no model is exported
# or lowered, no recipe runs, torch is not imported; tests/static/test_static_marker.py keeps that true), selected
# by path; their few tests marked `build` read the build and are left out. The tests that lower models
# (AOT compiler, quantization, probes, build cache) run in `make test`.
STATIC_TESTS := $(wildcard tests/static/test_*.py)
# pytest loads no plugin it finds installed (the browser and xdist plugins
# take seconds to import and these tests use neither), and keeps no cache.
check: venv ## fast static checks (drift rules, reader code, README copies, pins, CI workflows); runs no recipe, lowers no model
	$(BIN)/actionlint $(wildcard .github/workflows/*.yml)
	$(BIN)/python -m xnnguide.doccheck $(DOCCHECK_PATHS)
	$(BIN)/python -m xnnguide.doccheck.reader_code $(DOCCHECK_PATHS)
	PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 $(BIN)/python -m pytest -q -p no:cacheprovider -m "not build" $(PYTEST_ARGS) $(STATIC_TESTS)

print-static-tests: ## list the files `make check` runs
	@echo $(STATIC_TESTS)

check-build: venv ## the drift checks against the last `make html`: failed recipes, blocks without a fate
	$(BIN)/python -m xnnguide.doccheck --build $(DOCCHECK_PATHS)

# The release matrix (releases/combinations.toml): every recipe run on each combination of releases, one
# combination at a time, offline after its set-up, through the build's own runner in a scratch copy under
# _build/matrix/; its records go to releases/records/<combination>/ (xnnguide/tools/matrix.py).
# COMBO=<name> or all; a recipe that already has a record of its current source there does not run again.
COMBO ?=
MATRIX_JOBS ?= 2
# More options of the run, e.g. MATRIX_ARGS="--minutes 30": stop then, keeping what finished.
MATRIX_ARGS ?=
MATRIX = $(BIN)/python -m xnnguide.tools.matrix
matrix-requirements: venv ## write each release combination's requirements file (releases/<name>.txt) from requirements.txt
	$(MATRIX) requirements

matrix-venv: venv ## make a release combination's environment and fetch its aarch64 executorch: make matrix-venv COMBO=<name>|all
	@test -n "$(COMBO)" || { echo "usage: make matrix-venv COMBO=<name>|all (names: releases/combinations.toml)" >&2; exit 2; }
	$(MATRIX) venv $(COMBO) --make "$(MAKE)"

matrix: matrix-venv ## run every recipe on a release combination and record the outcome: make matrix COMBO=<name>|all
	$(MATRIX) run $(COMBO) --jobs $(MATRIX_JOBS) --offline "$(OFFLINE)" $(MATRIX_ARGS)

# The recipe `make recipe` runs (required): R=snippets/<folder>/<name>.py.
R ?=
recipe: venv ## run one recipe alone, no site build: make recipe R=snippets/<name>.py
	@test -n "$(R)" || { echo "usage: make recipe R=snippets/<name>.py" >&2; exit 2; }
	$(BIN)/python -m xnnguide.tools.run_recipe $(R)

# The new recipe's name (required) and task folder.
NAME ?=
DIR ?= lowering
new-recipe: venv ## start a recipe from the template: make new-recipe NAME=<what_it_does> [DIR=<task folder>]
	@test -n "$(NAME)" || { echo "usage: make new-recipe NAME=<what_it_does> [DIR=lowering|quantization|performance|troubleshooting]" >&2; exit 2; }
	@$(BIN)/python -m xnnguide.tools.new_recipe "$(NAME)" --dir "$(DIR)"

# BENCH_ARGS=--alone also times every recipe run alone, in a fresh interpreter.
BENCH_ARGS ?=
bench: venv ## time a cold, a no-op and a one-recipe rebuild, and the cold build's memory
	$(BIN)/python -m xnnguide.tools.bench --make "$(MAKE) --no-print-directory VENV=$(VENV)" $(BENCH_ARGS)

serve: venv ## rebuild and reload the site on every change
	$(BIN)/sphinx-autobuild -c . -d $(BUILDDIR)/doctrees docs $(HTMLDIR) \
	  --watch snippets --watch xnnguide --watch conf.py \
	  --ignore '*.pte' --ignore '*/gallery/*' -n

clean: ## remove the built site, generated gallery and recipe outputs
	rm -rf $(BUILDDIR) docs/gallery
	find snippets \( -name "*.pte" -o -name "*.etdp" -o -name "*.etrecord" \) -delete

distclean: clean ## also remove the virtual environment and the unpacked aarch64 wheel
	rm -rf $(VENV) $(AARCH64_DIR)
