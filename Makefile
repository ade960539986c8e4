# The two commands a newcomer needs are `make html` and `make test`.
# Every target creates the virtual environment first when it is missing or
# older than requirements.txt / pyproject.toml.

PYTHON    ?= python3.11
VENV      ?= .venv
BIN       := $(VENV)/bin
BUILDDIR  := _build
HTMLDIR   := $(BUILDDIR)/html
SPHINX    := $(BIN)/sphinx-build -c . -d $(BUILDDIR)/doctrees -b html docs $(HTMLDIR)
# The test build runs without a network: any download attempt fails it.
OFFLINE   ?= unshare -rn
PYTEST_ARGS ?=
# The checkout's own xnnguide comes first, also in recipe worker processes.
export PYTHONPATH := $(CURDIR)
# The environment is keyed by the content of the files that define it, not by
# their timestamps, so a fresh clone or a worktree reuses a matching .venv.
ENV_KEY   := $(shell cat requirements.txt pyproject.toml | sha256sum | cut -c1-16)
ENV_STAMP := $(VENV)/.installed-$(ENV_KEY)

.DEFAULT_GOAL := help
.PHONY: help venv html test check recipe bench serve clean distclean

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  make %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

venv: $(ENV_STAMP) ## create or refresh the virtual environment

$(ENV_STAMP):
	@case "$(abspath $(VENV))" in $(CURDIR)/*) ;; *) \
	  echo "error: $(VENV) does not match requirements.txt, and is outside this checkout; refusing to recreate it" >&2; exit 2;; esac
	@echo ">> creating $(VENV) from requirements.txt (first run takes a few minutes)"
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --disable-pip-version-check --progress-bar off -r requirements.txt
	$(BIN)/pip install --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $@

html: venv ## build the site into _build/html, running every changed recipe
	$(SPHINX) -n --keep-going

test: venv ## everything CI checks: offline strict build, then the test suite
	@status=0; \
	echo ">> offline, strict build (-W -n, network disabled by '$(OFFLINE)')"; \
	$(OFFLINE) $(SPHINX) -E -n -W --keep-going || status=$$?; \
	echo ">> test suite"; \
	$(BIN)/python -m pytest $(PYTEST_ARGS) || status=1; \
	exit $$status

check: venv ## fast static checks; runs no recipe
	$(BIN)/python -m pytest -m "not build" $(PYTEST_ARGS)

recipe: venv ## run one recipe alone, no site build: make recipe R=snippets/<name>.py
	@test -n "$(R)" || { echo "usage: make recipe R=snippets/<name>.py" >&2; exit 2; }
	$(BIN)/python -m xnnguide.run_recipe $(R)

bench: venv ## time a cold, a no-op and a one-recipe rebuild, and the cold build's memory
	$(BIN)/python -m xnnguide.bench --make "$(MAKE) --no-print-directory VENV=$(VENV)"

serve: venv ## rebuild and reload the site on every change
	$(BIN)/sphinx-autobuild -c . -d $(BUILDDIR)/doctrees docs $(HTMLDIR) \
	  --watch snippets --watch xnnguide --watch conf.py \
	  --ignore '*.pte' --ignore '*/gallery/*' -n

clean: ## remove the built site, generated gallery and recipe outputs
	rm -rf $(BUILDDIR) docs/gallery docs/sg_execution_times.rst snippets/*.pte

distclean: clean ## also remove the virtual environment
	rm -rf $(VENV)
