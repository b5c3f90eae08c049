# Entry points (see README.md):
#   make book        set up .venv, execute every chapter into _build/executed, build the HTML
#                    book from those copies in _build/html (the tracked files are not touched)
#   make test        set up .venv (and Chromium for the browser test), run the whole test suite
#   make notebooks   re-execute the committed notebooks in place (then commit them)
# Each starts from nothing on a machine with Python, pip, node and npm.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.requirements-installed
NOTEBOOKS := $(sort $(wildcard notebooks/[0-9][0-9]_*.py))
EXECUTED := _build/executed

.PHONY: book test venv execute notebooks html chromium clean

venv: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.txt
	touch $(STAMP)

# Execute every chapter in order at default parameters (chapter 3 reads chapter 2's checkpoint
# from results/). Each chapter runs from a fresh .ipynb made from its .py source into
# $(EXECUTED), so the tracked notebooks stay as committed and `git status` stays clean.
execute: venv
	@mkdir -p $(EXECUTED)
	@for py in $(NOTEBOOKS); do \
	  nb=$(EXECUTED)/$$(basename $${py%.py}).ipynb; \
	  echo "executing $$py into $$nb"; \
	  $(BIN)/jupytext --quiet --to ipynb --output $$nb $$py || exit 1; \
	  $(BIN)/papermill --no-progress-bar --log-level WARNING --cwd notebooks -k python3 $$nb $$nb || exit 1; \
	done

# Refresh the committed notebooks: sync each .ipynb with its .py (outputs and the .py's cell
# tags kept), execute it in place, and record which code it ran (notebooks/fingerprints.json).
# Run this, and commit, when a chapter or its code changed: a test fails until you do.
notebooks: venv
	$(BIN)/python tools/sync_parameter_comments.py $(NOTEBOOKS)
	$(BIN)/python tools/sync_notebooks.py $(NOTEBOOKS)
	@for nb in $(NOTEBOOKS:.py=.ipynb); do \
	  echo "executing $$nb in place"; \
	  $(BIN)/papermill --no-progress-bar --log-level WARNING --cwd notebooks -k python3 $$nb $$nb || exit 1; \
	done
	$(BIN)/python tools/record_fingerprints.py $(NOTEBOOKS)
	$(BIN)/python tools/results_table.py

# The HTML book (Sphinx with MyST-NB, offline; tools/build_book.py) from the executed copies when
# `make execute` made them, else from the committed notebooks.
html: venv
	$(BIN)/python tools/build_book.py --notebooks $(EXECUTED) --results results

book: execute html

chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian chromium for the browser test"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

test: venv chromium
	$(BIN)/python -m pytest -q

clean:
	rm -rf _build results
