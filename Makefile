# Two entry points (see README.md):
#   make book   set up .venv, sync and execute every chapter, build the HTML book in _build/html
#   make test   set up .venv (and Chromium for the browser test), run the whole test suite
# Both start from nothing on a machine with Python, pip, node and npm.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.requirements-installed
NOTEBOOKS := $(sort $(wildcard notebooks/[0-9][0-9]_*.py))

.PHONY: book test venv sync execute html chromium clean

venv: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.txt
	touch $(STAMP)

# Make each .ipynb hold the cells of its .py source (the .py is the source; outputs are kept).
sync: venv
	$(BIN)/jupytext --quiet --update --to ipynb $(NOTEBOOKS)

# Execute every chapter in order at default parameters, in place (chapter 3 reads chapter 2's
# checkpoint from results/).
execute: sync
	@for nb in $(NOTEBOOKS:.py=.ipynb); do \
	  echo "executing $$nb"; \
	  $(BIN)/papermill --no-progress-bar --log-level WARNING --cwd notebooks -k python3 $$nb $$nb || exit 1; \
	done

html: venv
	$(BIN)/python tools/build_book.py

book: execute html

chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian chromium for the browser test"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

test: venv chromium
	$(BIN)/python -m pytest -q

clean:
	rm -rf _build results
