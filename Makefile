# Every target builds .venv itself on a fresh machine (Python 3.11 and pip are enough).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8501

.PHONY: run test test-fast lint docs bench bench-large clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

run: $(VENV)/.installed
	$(PY) -m streamlit run app.py --server.address 127.0.0.1 --server.port $(PORT) \
		--server.headless true --browser.gatherUsageStats false

# One pytest worker per core (`-n auto`: 2 on CI's machine), each test file whole on one worker
# (pyproject's addopts). TEST_WORKERS=0 runs in one process; JURYBOX_STRESS=1 (CI) repeats the
# race and kill tests many times.
TEST_WORKERS ?= auto

test: $(VENV)/.installed
	$(PY) -m pytest -q -n $(TEST_WORKERS)

# Everything but the browser tests (Chromium against a running app): minutes less.
test-fast: $(VENV)/.installed
	$(PY) -m pytest -q -n $(TEST_WORKERS) -m "not browser"

# The manual is built strictly: a broken link or anchor, a page missing from the nav or a
# failing hook fails lint. The site goes to site/ (ignored by git).
lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

# The manual on http://127.0.0.1:8000, rebuilt on every change.
docs: $(VENV)/.installed
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve --dev-addr 127.0.0.1:8000

bench: $(VENV)/.installed
	$(PY) -m benchmarks

# Minutes to hours: `jurybox judge` over JURYBOX_BENCH_ITEMS items (default 1,000,000) x 3
# critics against the simulator, measured from outside (wall time, peak memory); the pages and
# the analysis over such a run (JURYBOX_BENCH_BEFORE=<checkout> adds the figures of that code).
bench-large: $(VENV)/.installed
	$(PY) -m benchmarks.large_import
	$(PY) -m benchmarks.large_run
	$(PY) -m benchmarks.large_pages
	$(PY) -m benchmarks.large_analysis

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache site
