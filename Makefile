# vilab: `make app` runs the lab, `make test` runs every test, `make bench` the benchmarks.
# Each target creates .venv and installs the project into it on first use.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PORT   ?= 8501

.PHONY: app test test-fast bench install data clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

app: $(STAMP)
	$(BIN)/vilab app --port $(PORT) --headless

test: $(STAMP)
	bash scripts/ensure_chromium.sh
	$(BIN)/python -m pytest -n 2 --dist loadfile

# everything except the Chromium tests, for a quick local check
test-fast: $(STAMP)
	$(BIN)/python -m pytest -n 2 --dist loadfile -m "not browser"

bench: $(STAMP)
	$(BIN)/vilab bench

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis *.egg-info
