# Two commands for a newcomer: `make run` and `make test`. Everything else is installed by them.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PORT ?= 8000
PYTEST_ARGS ?=
# Two workers, each with its own test database (test_judgments_gw0, _gw1): the machine has 2 cores.
PYTEST_WORKERS ?= 2
# Python caches bytecode even where the environment says not to (PYTHONDONTWRITEBYTECODE): the tests start
# ~100 Python processes, pytest keeps its rewritten test modules there, and the test install skips pip's
# compiling of every module (9 of its 29 s) for a module compiled once, when first imported.
export PYTHONDONTWRITEBYTECODE :=

.PHONY: run test install lint bench stop-db

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet --no-compile -e ".[test]"
	touch $@ $(VENV)/.installed

install: $(VENV)/.installed

## .env: local development settings (DEBUG=1, a random SECRET_KEY), written once; git-ignored.
.env: | $(BIN)/python
	$(BIN)/python -m config.local_env $@

## make run: install, migrate, load the demo and serve on http://127.0.0.1:$(PORT) with a task worker.
run: $(VENV)/.installed .env
	$(BIN)/python manage.py run_local --port $(PORT)

## make test: install the test tools (and, as root, Debian's chromium for browser tests) and run every test.
test: $(VENV)/.installed-test
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "Installing Debian's chromium for the browser tests..."; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "chromium not found: browser tests will be skipped (apt-get install chromium)"; fi; }
	DEBUG=1 $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist worksteal --durations=10 $(PYTEST_ARGS)

lint: $(VENV)/.installed-test
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

## make bench: every benchmark (tests/bench/): scoring against pytrec_eval, comparison pages, imports/exports against psql
## (bench_exchange; bench_export on a generated realistic pool), live capture against the engine's own rate,
## 32 raters grading against gunicorn, a 200 MB upload's memory.
bench: $(VENV)/.installed-test
	DEBUG=1 $(BIN)/python tests/bench/run.py bench_scoring
	DEBUG=1 $(BIN)/python tests/bench/run.py bench_compare
	DEBUG=1 $(BIN)/python tests/bench/run.py bench_exchange
	DEBUG=1 $(BIN)/python tests/bench/run.py bench_export
	DEBUG=1 $(BIN)/python tests/bench/run.py bench_capture
	DEBUG=1 $(BIN)/python tests/bench/run.py bench_capture --latency-ms 15
	DEBUG=1 $(BIN)/python tests/bench/run.py bench_grading
	DEBUG=1 $(BIN)/python tests/bench/run.py bench_upload
	DEBUG=1 $(BIN)/python tests/bench/run.py bench_gate

stop-db: $(VENV)/.installed
	DEBUG=1 $(BIN)/python -c "import django,os;os.environ.setdefault('DJANGO_SETTINGS_MODULE','config.settings');django.setup();from django.conf import settings;from config.embedded_db import server;print('stopped' if server.stop(settings.EMBEDDED_PGDATA) else 'not running')"
