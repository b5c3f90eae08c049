"""Record which code each chapter's committed outputs come from (`make notebooks` runs this
after executing the notebooks; run it yourself after executing one chapter by hand).

    python tools/record_fingerprints.py notebooks/07_learned_circuit.py [...]

The record is notebooks/fingerprints.json; tests/test_notebook_pairs.py fails when a chapter's
source or a `lib` module it uses has changed since (see lib.book.code_fingerprint).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lib.book.code_fingerprint import record_fingerprints  # noqa: E402

if __name__ == "__main__":
    sources = [Path(arg).resolve() for arg in sys.argv[1:]]
    if not sources or any(path.suffix != ".py" or not path.exists() for path in sources):
        sys.exit("Give the chapters' .py sources, e.g. notebooks/07_learned_circuit.py.")
    record = record_fingerprints(sources, ROOT)
    print(f"recorded {len(sources)} of {len(record)} chapters in notebooks/fingerprints.json")
