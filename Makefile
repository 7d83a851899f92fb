# duplexeval: the two commands a reader needs are `make reproduce` and `make test`.
# Both set everything up on a fresh Debian machine (system packages, .venv, the package);
# on a set-up machine the stamp file makes set-up a no-op, so testing starts at once.

PYTHON ?= python3.11
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.duplexeval-installed
SUITE  ?= embedded
MODELS ?=
PYTEST_ARGS ?=

.PHONY: setup test reproduce validate image clean-runs

setup: $(STAMP)

$(STAMP): pyproject.toml requirements/lock.txt requirements/moshi.txt scripts/setup-system.sh
	bash scripts/setup-system.sh
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	# The CPU build of torch first: a plain `torch` would pull a multi-GB CUDA build.
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -c requirements/lock.txt -e '.[dev]'
	# moshi with --no-deps: its metadata pins torch<2.10, yet its streaming code runs on
	# torch 2.13.0 (requirements/moshi.txt says why; the moshi-tiny tests exercise it).
	$(PY) -m pip install -q --no-deps -c requirements/lock.txt -r requirements/moshi.txt
	touch $(STAMP)

test: setup
	$(VENV)/bin/pytest $(PYTEST_ARGS)

reproduce: setup
	$(VENV)/bin/duplexeval reproduce --suite $(SUITE) $(if $(MODELS),--models $(MODELS),)

validate: setup
	$(VENV)/bin/duplexeval validate

image: setup
	$(VENV)/bin/duplexeval image build $(MODEL)

clean-runs:
	rm -rf runs
