# erpsim: set-up, demo and tests. `make demo` and `make test` do all set-up on a fresh machine.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
PYTEST_ARGS ?=

.PHONY: demo test lint bench clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[test]'
	touch $(STAMP)

## demo: build a small company's books into demo-books.db and print them
demo: $(STAMP)
	$(BIN)/erpsim demo

## test: the whole suite (SQLite and PostgreSQL), lint and layering included
test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -n 2 $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .

bench: $(STAMP)
	$(BIN)/erpsim bench ledger

clean:
	rm -rf $(VENV) demo-books.db demo-books.db-wal demo-books.db-shm .pytest_cache .hypothesis
