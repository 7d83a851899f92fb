# duplexeval: the two commands a reader needs are `make reproduce` and `make test`.
# Both set everything up on a fresh Debian machine (system packages, .venv, the package);
# on a set-up machine the stamp file makes set-up a no-op, so testing starts at once.

PYTHON ?= python3.11
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.duplexeval-installed
# Qwen3-ASR's real code path needs transformers==4.57.6, which cannot live beside the lock:
# its own venv (requirements/qwen3.txt says why), used by `make test` for tests/test_qwen3_*.py.
QWEN3_VENV  := .venv-qwen3
QWEN3_STAMP := $(QWEN3_VENV)/.duplexeval-installed
# Full-Duplex-Bench's ASR (NeMo parakeet-tdt) in its own venv (requirements/parakeet.txt says why);
# opt-in: `make parakeet-venv`, then tests/test_asr_parakeet_venv.py runs its tests there.
PARAKEET_VENV  := .venv-parakeet
PARAKEET_STAMP := $(PARAKEET_VENV)/.duplexeval-installed
HARNESS_IMAGE ?= duplexeval/harness:0.1
HARNESS_BASE  ?= duplexeval/base:bookworm
WEIGHTS_CACHE ?= $(HOME)/.cache/duplexeval/weights
SUITE  ?= embedded
MODELS ?=
PYTEST_ARGS ?=
# The suite runs on every core (pytest-xdist; tests/conftest.py says how modules are grouped).
TEST_JOBS ?= $(shell nproc 2>/dev/null || echo 1)
# pip without byte-compiling what it installs: ~20,000 files in .venv alone, about a minute of
# CPU on a 2-core machine, most of them never imported; Python compiles what it imports.
PIP := pip install -q --no-compile --disable-pip-version-check

.PHONY: setup test test-fast lint fuzz reproduce validate image clean-runs qwen3-venv parakeet-venv harness-image harness-check

setup: $(STAMP)

$(STAMP): pyproject.toml requirements/lock.txt requirements/moshi.txt requirements/paper-asr.txt scripts/setup-system.sh
	bash scripts/setup-system.sh
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	# The CPU build of torch first: a plain `torch` would pull a multi-GB CUDA build.
	$(PY) -m $(PIP) torch==2.13.0
	$(PY) -m $(PIP) -c requirements/lock.txt -e '.[dev]'
	# moshi with --no-deps: its metadata pins torch<2.10, yet its streaming code runs on
	# torch 2.13.0 (requirements/moshi.txt says why; the moshi-tiny tests exercise it).
	$(PY) -m $(PIP) --no-deps -c requirements/lock.txt -r requirements/moshi.txt
	# whisper-timestamped (the MTR ASR) with --no-deps: openai-whisper would pull triton,
	# which CPU inference never imports (requirements/paper-asr.txt).
	$(PY) -m $(PIP) --no-deps -c requirements/lock.txt -r requirements/paper-asr.txt
	touch $(STAMP)

qwen3-venv: $(QWEN3_STAMP)

# Its third-party packages install beside .venv's (`make -j2`); the package itself only after
# .venv's, as both editable installs build in this checkout (egg-info, the bundle).
QWEN3_DEPS := $(QWEN3_VENV)/.deps-installed

$(QWEN3_DEPS): requirements/qwen3.txt
	test -x $(QWEN3_VENV)/bin/python || $(PYTHON) -m venv $(QWEN3_VENV)
	$(QWEN3_VENV)/bin/python -m $(PIP) torch==2.13.0
	$(QWEN3_VENV)/bin/python -m $(PIP) --no-deps -r requirements/qwen3.txt
	touch $(QWEN3_DEPS)

$(QWEN3_STAMP): pyproject.toml $(QWEN3_DEPS) $(STAMP)
	$(QWEN3_VENV)/bin/python -m $(PIP) --no-deps -e .
	touch $(QWEN3_STAMP)

parakeet-venv: $(PARAKEET_STAMP)

$(PARAKEET_STAMP): pyproject.toml requirements/parakeet.txt
	test -x $(PARAKEET_VENV)/bin/python || $(PYTHON) -m venv $(PARAKEET_VENV)
	$(PARAKEET_VENV)/bin/python -m $(PIP) torch==2.13.0
	$(PARAKEET_VENV)/bin/python -m $(PIP) --no-deps -r requirements/parakeet.txt
	$(PARAKEET_VENV)/bin/python -m $(PIP) --no-deps -e .
	touch $(PARAKEET_STAMP)

test:
	# The two venvs are independent: on a fresh clone they install side by side (one core
	# each; on a set-up machine both stamps make this a no-op).
	$(MAKE) --no-print-directory -j2 setup qwen3-venv
	# Two lanes side by side: the waiting modules (marked wallclock) in one process, the rest on
	# $(TEST_JOBS) xdist workers at nice 10 (scripts/run-tests.sh says why). Qwen3-ASR on random
	# tiny models runs in its own venv, as one test (tests/test_qwen3_venv.py).
	VENV=$(VENV) bash scripts/run-tests.sh $(TEST_JOBS) $(PYTEST_ARGS)

# The inner loop: every test but the end-to-end modules (marked `slow` by tests/conftest.py:
# real models on real audio, wall-clock sessions, containers). Not a substitute for `make test`.
test-fast: setup
	PYTHONDONTWRITEBYTECODE= $(VENV)/bin/pytest -n $(TEST_JOBS) --dist loadfile --no-loadscope-reorder -m "not slow and not docker" $(PYTEST_ARGS)

# The static checks alone (tests/test_static_checks.py runs them within `make test`; their
# settings are in pyproject.toml and only rise).
lint: setup
	$(VENV)/bin/ruff check duplexeval tests bench
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

# Work units spread over one model server per core (docs/runner.md, "Executors"); JOBS=1 is serial.
JOBS ?= $(shell nproc 2>/dev/null || echo 1)
reproduce: setup
	$(VENV)/bin/duplexeval reproduce --suite $(SUITE) $(if $(MODELS),--models $(MODELS),) \
	  $(if $(filter 1,$(JOBS)),,--executor local --jobs $(JOBS))

validate: setup
	$(VENV)/bin/duplexeval validate

image: setup
	$(VENV)/bin/duplexeval image build $(MODEL)

# The GPU image of the harness side of the paper suites (Qwen3-ASR, Qwen3-TTS,
# whisper-timestamped, stable-ts with a matching torch/torchaudio pair): images/harness/README.md.
harness-image: setup
	$(PY) images/harness/build.py --base $(HARNESS_BASE) --tag $(HARNESS_IMAGE)

harness-check:
	docker run --rm --gpus all --network none -v $(WEIGHTS_CACHE):/weights:ro $(HARNESS_IMAGE)

# The fuzz targets (tests/test_fuzz_*.py) with 50x the examples `make test` gives them.
FUZZ_EXAMPLES ?= 15000
fuzz: setup
	DUPLEXEVAL_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(VENV)/bin/pytest -q tests/test_fuzz_*.py

clean-runs:
	rm -rf runs
