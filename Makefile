# Entry points (see README.md):
#   make book        set up .venv, bring _build/executed up to date (tools/execute_chapters.py: a
#                    chapter whose code fingerprint matches notebooks/fingerprints.json is copied
#                    as committed, the others are executed), build the HTML book from those copies
#                    in _build/html (the tracked files are not touched); minutes when nothing changed
#   make reproduce   execute every chapter from nothing into _build/reproduce (about 75 minutes on
#                    2 cores), write their wall times, compare the verdicts with the committed ones
#   make test        set up .venv (and Chromium for the browser test), run the whole test suite
#   make notebooks   re-execute the committed notebooks in place (then commit them)
# Each starts from nothing on a machine with Python, pip, node and npm.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.requirements-installed
NOTEBOOKS := $(sort $(wildcard notebooks/[0-9][0-9]_*.py))
EXECUTED := _build/executed
REPRODUCE := _build/reproduce

.PHONY: book test venv execute reproduce notebooks html chromium clean

venv: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.txt
	touch $(STAMP)

# Bring $(EXECUTED) up to date for the book: a chapter whose code fingerprint (its .py and the
# `lib` modules it imports) matches notebooks/fingerprints.json is copied as committed, with its
# results JSON from notebooks/results/ into results/; the others are executed from a fresh .ipynb
# made from the .py (plus, first, an earlier chapter whose outputs they read from results/ when
# those are missing: tools/execute_chapters.py, DEPENDENCIES). The tracked notebooks stay as
# committed, so `git status` stays clean.
execute: venv
	$(BIN)/python tools/execute_chapters.py --mode cached --out $(EXECUTED) --results results

# Execute every chapter from nothing, in order, into $(REPRODUCE) (results in $(REPRODUCE)/results,
# wall times in $(REPRODUCE)/timings.md), then list the verdicts that differ from the committed run's.
reproduce: venv
	rm -rf $(REPRODUCE)
	$(BIN)/python tools/execute_chapters.py --mode all --out $(REPRODUCE) --results $(REPRODUCE)/results
	@if [ -f tools/verdict_stability.py ]; then \
	  $(BIN)/python tools/verdict_stability.py notebooks/results $(REPRODUCE)/results; \
	else \
	  echo "tools/verdict_stability.py is not in this checkout: verdicts not compared with notebooks/results."; \
	fi

# Refresh the committed notebooks: sync each .ipynb with its .py (outputs and the .py's cell
# tags kept), execute it in place, keep its results JSON beside it (notebooks/results/, which
# `make execute` copies back for a reused chapter), and record which code it ran
# (notebooks/fingerprints.json).
# Run this, and commit, when a chapter or its code changed: a test fails until you do.
notebooks: venv
	$(BIN)/python tools/sync_parameter_comments.py $(NOTEBOOKS)
	$(BIN)/python tools/sync_notebooks.py $(NOTEBOOKS)
	@mkdir -p notebooks/results
	@for nb in $(NOTEBOOKS:.py=.ipynb); do \
	  echo "executing $$nb in place"; \
	  $(BIN)/papermill --no-progress-bar --log-level WARNING --cwd notebooks -k python3 $$nb $$nb || exit 1; \
	  cp results/$$(basename $${nb%.ipynb}).json notebooks/results/ || exit 1; \
	done
	$(BIN)/python tools/record_fingerprints.py $(NOTEBOOKS)
	$(BIN)/python tools/results_table.py --results notebooks/results
	$(BIN)/python tools/readme_findings.py

# The HTML book (Sphinx with MyST-NB, offline; tools/build_book.py) from the copies in $(EXECUTED)
# when `make execute` made them, else from the committed notebooks.
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

# The published scale on a GPU (README, "On a GPU"): tools/published.py runs its STEPS, most
# important first, into results/published/<step>/, skips the finished ones, and starts only the
# steps whose estimated time (probed on the device first) fits in BUDGET_S seconds.
DEVICE ?= auto
BUDGET_S ?= 600

.PHONY: published
published: venv
	$(BIN)/python tools/published.py --device $(DEVICE) --budget-s $(BUDGET_S)
