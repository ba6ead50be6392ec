# erpsim: set-up, demo and tests. `make demo` and `make test` do all set-up on a fresh machine.
# the interpreter .venv is built with: Python 3.12 (or 3.13) where one is installed, else
# python3 (3.11 or later); see .ci/python
PYTHON ?= $(shell .ci/python)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
PYTEST_ARGS ?=
PACKAGES := erp sim counterparties scenarios checks desk runs

.PHONY: demo test lint bench mutate clean bytecode

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[test]'
	touch $(STAMP)

## bytecode: compile the project's modules once (where PYTHONDONTWRITEBYTECODE is set, every
##           erpsim process would otherwise compile them again from source, ~0.2 s each); not
##           the library's and desk tasks' folders, which are data copied as they are
bytecode: $(STAMP)
	$(BIN)/python -m compileall -q -j 0 -x "(^|/)(desk/tasks|scenarios/library)/" $(PACKAGES) > /dev/null

## demo: run the cash-application scenario with the reference agent and print the figures
demo: $(STAMP) bytecode
	$(BIN)/erpsim run cash-application --seed 1 --agent reference --out demo-attempt --replace

## test: the whole suite (SQLite and PostgreSQL, LibreOffice, docker, the agent CLIs), lint,
##       type check and layering, with coverage (subprocesses included; a floor per package,
##       tests/coverage/floors.toml; through sys.monitoring on Python 3.12 and later) and the
##       mutation gate on the gated modules the last commit changed; .ci/setup first installs
##       and starts what it needs; pytest ends with its 25 slowest tests (the suite's 30-minute
##       bound is kept by reading them)
test: $(STAMP) bytecode
	$(BIN)/ruff check .
	$(BIN)/mypy
	rm -f .coverage .coverage.*
	@setup_env=$$(.ci/setup) && eval "$$setup_env" && \
	  export COVERAGE_CORE=$$($(BIN)/python -c 'import sys; print("sysmon" if sys.version_info >= (3, 12) else "ctrace")') && \
	  echo "COVERAGE_CORE=$$COVERAGE_CORE $(BIN)/python -m pytest -n 2 --dist loadgroup --durations=25 --cov --cov-report= $(PYTEST_ARGS)" && \
	  $(BIN)/python -m pytest -n 2 --dist loadgroup --durations=25 --cov --cov-report= $(PYTEST_ARGS)
	$(BIN)/python tests/coverage/floors.py
	$(BIN)/python tests/mutation/gate.py --changed

## mutate: the mutation gate over every gated module (tests/mutation/modules.toml): figures per
##         module; fails on a surviving mutant not listed in tests/mutation/equivalent.toml
mutate: $(STAMP)
	$(BIN)/python tests/mutation/gate.py

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy

bench: $(STAMP) bytecode
	$(BIN)/erpsim bench ledger

clean:
	rm -rf $(VENV) demo-attempt demo-books.db demo-books.db-wal demo-books.db-shm .pytest_cache .hypothesis \
	  .coverage .coverage.*
