"""Build the HTML book into _build/html (the `html` step of `make book`).

First tries MyST's own HTML export, whose theme is downloaded on first use. Where that is not
possible (no network), prints one line saying so and builds the offline static book instead
(tools/offline_book.py): same pages, same order, working figures and math, no network needed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import offline_book  # the sibling script in tools/ (run as `python tools/build_book.py`)

ROOT = offline_book.ROOT


def try_myst_html() -> bool:
    """Run `myst build --html`; True if it produced _build/html/index.html."""
    myst = Path(sys.executable).parent / "myst"
    try:
        result = subprocess.run([str(myst), "build", "--html"], cwd=ROOT, capture_output=True, text=True,
                                timeout=600)
    except (OSError, subprocess.SubprocessError):
        return False
    return result.returncode == 0 and (ROOT / "_build" / "html" / "index.html").exists()


def main() -> None:
    parser = argparse.ArgumentParser(description="Build the HTML book.")
    parser.add_argument("--offline", action="store_true", help="skip MyST's theme; build the offline book only")
    parser.add_argument("--output", type=Path, default=ROOT / "_build" / "html",
                        help="folder of the offline book (default: _build/html)")
    args = parser.parse_args()
    if not args.offline and try_myst_html():
        print(f"MyST HTML site built in {ROOT / '_build' / 'html'}")
        return
    if not args.offline:
        print("The MyST theme could not be downloaded (no network), so the offline static HTML book is built instead.")
    index = offline_book.build(args.output)
    print(f"Offline HTML book built: {index}")


if __name__ == "__main__":
    main()
